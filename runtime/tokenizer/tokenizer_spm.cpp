// Tokenizer: the SentencePiece ("llama") parts, at init and in the run phase.
//
// What transformers does with a GGUF SentencePiece vocabulary, which these ids follow:
//   - control tokens (and user-defined ones, always) are split off the raw text first;
//   - each remaining stretch has its spaces replaced by "▁" and is one word (nothing splits
//     it further), prefixed with "▁" when add_space_prefix asks (LlamaTokenizer's Metaspace
//     with prepend_scheme "first": only the stretch at the start of the text, and only when
//     it does not already start with a space);
//   - the word is merged as SpmEncoder describes, with byte fallback for characters no
//     token spells.
// Gemma files (architecture gemma, gemma2, gemma3) use GemmaTokenizer: no space prefix
// ever, merges ordered by vocabulary position, space-run tokens respelled with "▁".
//
// A tokenizer.json BPE model with byte_fallback (Llama 2, Mistral, Gemma) comes with its
// merge list instead: its spaces follow the file's normalizers and Metaspace pre-tokenizer
// (TokenizerSpec's space rules), and each word is merged as Hugging Face's BPE does, the
// adjacent pair earliest in the merge list first (BpeEncoder over a character's token, or
// its <0xNN> byte tokens, or the unknown token).
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "runtime/tokenizer/utf8.h"

#include "runtime/tokenizer/tokenizer.h"

namespace staticlm {

namespace {

bool IsGemmaArchitecture(std::string_view a) {
  return a == "gemma" || a == "gemma2" || a == "gemma3";
}

}  // namespace

Status Tokenizer::InitSpm(const TokenizerSpec& spec, size_t max_text_bytes) {
  const bool gemma = IsGemmaArchitecture(spec.architecture);
  if (spec.has_space_rules) {
    space_prefix_ = spec.space_prefix;
    prefix_always_added_ = spec.prefix_always_added;
    split_at_metaspace_ = spec.split_at_metaspace;
  } else if (!gemma && spec.add_space_prefix) {
    // As llama.cpp and transformers' Prepend normalizer do: "▁" opens the text and every
    // stretch after a special token, even one that starts with a space (" Hello": "▁▁Hello").
    space_prefix_ = SpacePrefix::kAlways;
    prefix_always_added_ = true;
  } else {
    space_prefix_ = SpacePrefix::kNever;
  }
  normalized_.assign(text::kMetaSpace.size() * (max_text_bytes + 1), 0);
  if (!spec.merges.empty()) return InitSpmMerges(spec, max_text_bytes);
  text::SpmVocabOptions options;
  options.order = gemma ? text::SpmMergeOrder::kByPosition : text::SpmMergeOrder::kByScore;
  options.respell_space_runs = gemma;
  STATICLM_RETURN_IF_ERROR(spm_vocab_.Init(spec.tokens, spec.token_types, spec.scores, options));
  // Every input byte gives at most one symbol (a character's token, or one byte token per
  // byte), except a space: "▁" is one symbol when the vocabulary has it, three byte tokens
  // when not. The prefix adds one space.
  const size_t per_byte = spm_vocab_.Find(text::kMetaSpace) >= 0 ? 1 : 3;
  return spm_.Init(per_byte * (max_text_bytes + 1));
}

Status Tokenizer::InitSpmMerges(const TokenizerSpec& spec, size_t max_text_bytes) {
  (void)max_text_bytes;
  spm_merges_ = true;
  fuse_unk_ = spec.fuse_unk;
  STATICLM_RETURN_IF_ERROR(InitNormalIndex());
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    fallback_ids_[b] = normal_index_.Find(name);
  }
  STATICLM_RETURN_IF_ERROR(merges_.Init(spec.merges.size()));
  for (size_t r = 0; r < spec.merges.size(); ++r) {
    const std::string_view m = spec.merges[r];
    const size_t space = m.find(' ');
    int32_t ids[3] = {-1, -1, -1};
    if (space != std::string_view::npos && m.find(' ', space + 1) == std::string_view::npos) {
      ids[0] = normal_index_.Find(m.substr(0, space));
      ids[1] = normal_index_.Find(m.substr(space + 1));
      ids[2] = normal_index_.Find(m.substr(0, space), m.substr(space + 1));
    }
    if (ids[0] < 0 || ids[1] < 0 || ids[2] < 0) {
      return Status::Error(StatusCode::kFormatError,
                           "merge %zu ('%.*s') does not join two vocabulary tokens into a third", r,
                           static_cast<int>(std::min<size_t>(m.size(), 64)), m.data());
    }
    merges_.Insert(ids[0], ids[1], static_cast<int32_t>(r), ids[2]);
  }
  // A word is at most the whole normalized stretch, one symbol per byte at most.
  return bpe_.Init(normalized_.size());
}

// Writes the stretch into normalized_ with its spaces as "▁" and the prefix the space rules
// ask for; returns its length.
size_t Tokenizer::NormalizeSpmStretch(std::string_view text, bool at_start) {
  char* norm = normalized_.data();
  size_t len = 0;
  const bool starts_with_space =
      text[0] == ' ' || text.substr(0, text::kMetaSpace.size()) == text::kMetaSpace;
  const bool wanted =
      space_prefix_ == SpacePrefix::kAlways || (space_prefix_ == SpacePrefix::kFirst && at_start);
  if (wanted && (prefix_always_added_ || !starts_with_space)) {
    std::memcpy(norm, text::kMetaSpace.data(), text::kMetaSpace.size());
    len += text::kMetaSpace.size();
  }
  for (char c : text) {
    if (c == ' ') {
      std::memcpy(norm + len, text::kMetaSpace.data(), text::kMetaSpace.size());
      len += text::kMetaSpace.size();
    } else {
      norm[len++] = c;
    }
  }
  return len;
}

// One word of a merge-list vocabulary: a symbol per character (its token, else its <0xNN>
// byte tokens, else the unknown token), then Hugging Face's BPE merges.
Status Tokenizer::EncodeSpmWord(std::string_view word, int32_t* out, size_t capacity, size_t* n) {
  int32_t* symbols = bpe_.symbols();
  size_t count = 0;
  bool last_unknown = false;
  for (size_t i = 0; i < word.size();) {
    uint32_t cp = 0;
    const auto len = static_cast<size_t>(text::DecodeValidUtf8(word.data() + i, &cp));
    const int32_t id = normal_index_.Find(word.substr(i, len));
    bool fallback = id < 0;
    for (size_t k = 0; k < len && fallback; ++k) {
      fallback = fallback_ids_[static_cast<uint8_t>(word[i + k])] >= 0;
    }
    if (id >= 0) {
      symbols[count++] = id;
    } else if (fallback) {
      for (size_t k = 0; k < len; ++k)
        symbols[count++] = fallback_ids_[static_cast<uint8_t>(word[i + k])];
    } else if (unk_id_ >= 0 && !(fuse_unk_ && last_unknown)) {
      symbols[count++] = unk_id_;
    }
    last_unknown = id < 0 && !fallback;
    i += len;
  }
  size_t written = 0;
  STATICLM_RETURN_IF_ERROR(bpe_.EncodeSymbols(merges_, count, out + *n, capacity - *n, &written));
  *n += written;
  return Status::Ok();
}

Status Tokenizer::EncodeSpmStretch(std::string_view text, bool at_start, int32_t* out,
                                   size_t capacity, size_t* n) {
  if (text.empty()) return Status::Ok();
  const size_t len = NormalizeSpmStretch(text, at_start);
  const std::string_view norm(normalized_.data(), len);
  if (!spm_merges_) {
    size_t written = 0;
    STATICLM_RETURN_IF_ERROR(spm_.Encode(spm_vocab_, norm, out + *n, capacity - *n, &written));
    *n += written;
    return Status::Ok();
  }
  if (!split_at_metaspace_) return EncodeSpmWord(norm, out, capacity, n);
  // Metaspace's split: each "▁" begins a word (merged with what follows it).
  size_t start = 0;
  for (size_t i = 1; i <= len; ++i) {
    if (i < len && norm.compare(i, text::kMetaSpace.size(), text::kMetaSpace) != 0) continue;
    STATICLM_RETURN_IF_ERROR(EncodeSpmWord(norm.substr(start, i - start), out, capacity, n));
    start = i;
  }
  return Status::Ok();
}

}  // namespace staticlm
