#include "runtime/tokenizer/spm_vocab.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "runtime/tokenizer/token_type.h"
#include "runtime/tokenizer/utf8.h"

namespace staticlm::text {

namespace {

// Python's str.isspace(), which decides what transformers respells: Unicode Zs plus the
// characters of bidirectional class WS, B or S.
bool IsPythonSpace(uint32_t cp) {
  if (cp == ' ' || (cp >= '\t' && cp <= '\r') || (cp >= 0x1C && cp <= 0x1F)) return true;
  if (cp < 0x80) return false;
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
         cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

size_t CountChars(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<uint8_t>(c) & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

// A token of whitespace holding at least one real space (transformers' Gemma respelling).
bool IsSpaceRun(std::string_view t) {
  if (t.find(' ') == std::string_view::npos || !IsValidUtf8(t, nullptr)) return false;
  for (size_t i = 0; i < t.size();) {
    uint32_t cp = 0;
    i += static_cast<size_t>(DecodeValidUtf8(t.data() + i, &cp));
    if (!IsPythonSpace(cp)) return false;
  }
  return true;
}

}  // namespace

size_t UnescapeMetaSpace(std::string_view spelling, char* out) {
  size_t n = 0;
  for (size_t i = 0; i < spelling.size();) {
    if (spelling.compare(i, kMetaSpace.size(), kMetaSpace) == 0) {
      out[n++] = ' ';
      i += kMetaSpace.size();
    } else {
      out[n++] = spelling[i++];
    }
  }
  return n;
}

Status SpmVocab::Init(const std::vector<std::string_view>& tokens,
                      const std::vector<int32_t>& types, const std::vector<float>& scores,
                      const SpmVocabOptions& options) {
  const size_t n = tokens.size();
  if (scores.empty()) {
    return Status::Error(StatusCode::kFormatError,
                         "tokenizer.ggml.scores is missing (a 'llama' vocabulary needs it)");
  }
  if (scores.size() != n) {
    return Status::Error(StatusCode::kFormatError,
                         "tokenizer.ggml.scores has %zu values for %zu tokens", scores.size(), n);
  }
  STATICLM_RETURN_IF_ERROR(InitSpellings(tokens, options.respell_space_runs));
  STATICLM_RETURN_IF_ERROR(InitRanks(scores, options.order));

  STATICLM_RETURN_IF_ERROR(index_.Init(spellings_, n));
  for (size_t i = 0; i < n; ++i) {
    const bool control = !types.empty() && static_cast<TokenType>(types[i]) == TokenType::kControl;
    if (!control) index_.Insert(static_cast<int32_t>(i));
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    byte_ids_[b] = index_.Find(name);
    if (byte_ids_[b] < 0) {
      return Status::Error(StatusCode::kFormatError,
                           "tokenizer.ggml.tokens lacks the byte-fallback token %s (a 'llama' "
                           "vocabulary needs all 256)",
                           name);
    }
  }
  return Status::Ok();
}

Status SpmVocab::InitSpellings(const std::vector<std::string_view>& tokens,
                               bool respell_space_runs) {
  const size_t n = tokens.size();
  respelled_.assign(n, 0);
  chars_.assign(n, 0);
  offsets_.assign(n + 1, 0);
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    const size_t chars = CountChars(tokens[i]);
    if (chars > UINT16_MAX) {
      return Status::Error(StatusCode::kFormatError,
                           "tokenizer.ggml.tokens[%zu] is %zu characters long (limit 65535)", i,
                           chars);
    }
    chars_[i] = static_cast<uint16_t>(chars);
    respelled_[i] = respell_space_runs && IsSpaceRun(tokens[i]) ? 1 : 0;
    total += respelled_[i] != 0 ? chars * kMetaSpace.size() : tokens[i].size();
    if (total > UINT32_MAX) {
      return Status::Error(StatusCode::kFormatError,
                           "tokenizer.ggml.tokens: spellings exceed 4 GiB");
    }
    offsets_[i + 1] = static_cast<uint32_t>(total);
  }
  text_.assign(total, 0);
  for (size_t i = 0; i < n; ++i) {
    char* out = text_.data() + offsets_[i];
    if (respelled_[i] != 0) {
      for (size_t k = 0; k < chars_[i]; ++k) std::memcpy(out + 3 * k, kMetaSpace.data(), 3);
    } else if (!tokens[i].empty()) {
      std::memcpy(out, tokens[i].data(), tokens[i].size());
    }
  }
  spellings_ = SpellingTable{text_.data(), offsets_.data(), n};
  return Status::Ok();
}

Status SpmVocab::InitRanks(const std::vector<float>& scores, SpmMergeOrder order) {
  const size_t n = scores.size();
  rank_.assign(n, 0);
  if (order == SpmMergeOrder::kByPosition) {
    for (size_t i = 0; i < n; ++i) rank_[i] = static_cast<uint32_t>(i);
    return Status::Ok();
  }
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(scores[i])) {
      return Status::Error(StatusCode::kFormatError, "tokenizer.ggml.scores[%zu] is not finite", i);
    }
  }
  // Dense ranks by descending score: equal scores share a rank, so the encoder's later keys
  // (part lengths, id) break the tie.
  std::vector<int32_t> order_ids(n);
  for (size_t i = 0; i < n; ++i) order_ids[i] = static_cast<int32_t>(i);
  std::stable_sort(order_ids.begin(), order_ids.end(),
                   [&scores](int32_t a, int32_t b) { return scores[a] > scores[b]; });
  uint32_t r = 0;
  for (size_t k = 0; k < n; ++k) {
    if (k > 0 && scores[order_ids[k]] != scores[order_ids[k - 1]]) ++r;
    rank_[order_ids[k]] = r;
  }
  return Status::Ok();
}

size_t SpmVocab::bytes() const {
  return text_.capacity() + offsets_.capacity() * sizeof(uint32_t) + respelled_.capacity() +
         rank_.capacity() * sizeof(uint32_t) + chars_.capacity() * sizeof(uint16_t) +
         index_.bytes();
}

}  // namespace staticlm::text
