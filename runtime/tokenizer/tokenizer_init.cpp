// Tokenizer::Init: copies the vocabulary, undoes its byte-level spelling, and builds the
// merge table, the special-token list and the encoder's scratch.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <unordered_map>

#include "runtime/tokenizer/byte_level.h"
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/tokenizer/unicode_nfc_tables.h"

namespace staticlm {

namespace {

// Control tokens whose text marks the end of a turn or document, beyond the file's EOS/EOT
// ids (the set llama.cpp also treats as end-of-generation).
constexpr std::string_view kEndOfGenerationTexts[] = {
    "<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end|>", "<end_of_turn>", "<|end_of_text|>",
};

// Decodes "<0xAB>" into one byte, as byte-type tokens spell it.
bool ParseByteToken(std::string_view text, char* byte) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return false;
  int value = 0;
  for (size_t i = 3; i < 5; ++i) {
    const char c = text[i];
    int digit = -1;
    if (c >= '0' && c <= '9') digit = c - '0';
    if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
    if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    if (digit < 0) return false;
    value = value * 16 + digit;
  }
  *byte = static_cast<char>(value);
  return true;
}

// The pre-tokenizer a GGUF file's tokenizer.ggml.pre names (llama.cpp's names for the
// patterns staticlm has). Llama 3's files never merge a piece that is a token (llama.cpp
// and the tokenizer.json both say ignore_merges).
Status PreTokenizerOfGgufName(std::string_view name, text::PreTokenizerKind* kind,
                              bool* ignore_merges) {
  const auto is = [name](std::initializer_list<std::string_view> names) {
    for (std::string_view n : names) {
      if (name == n) return true;
    }
    return false;
  };
  *ignore_merges = false;
  if (is({"gpt2", "gpt-2"})) {
    *kind = text::PreTokenizerKind::kGpt2;
  } else if (is({"smollm", "starcoder"})) {
    *kind = text::PreTokenizerKind::kDigitsThenGpt2;
  } else if (is({"llama-bpe", "llama3", "llama-v3"})) {
    *kind = text::PreTokenizerKind::kLlama3;
    *ignore_merges = true;
  } else if (is({"qwen2"})) {
    *kind = text::PreTokenizerKind::kQwen2;
  } else if (is({"gpt-4o"})) {  // llama.cpp's name for o200k files (Phi-4-mini)
    *kind = text::PreTokenizerKind::kGpt4o;
  } else if (name.empty() || name == "default") {
    // llama.cpp's fallback for files whose converter did not know the pre-tokenizer (it
    // warns that quality degrades); no reference tokenizer splits text that way.
    return Status::Error(
        StatusCode::kUnsupported,
        "tokenizer.ggml.pre '%.*s' (llama.cpp's fallback) is not supported: "
        "reconvert naming the pre-tokenizer (gpt-2, smollm, llama-bpe, qwen2, gpt-4o)",
        static_cast<int>(name.size()), name.data());
  } else {
    return Status::Error(StatusCode::kUnsupported,
                         "tokenizer.ggml.pre '%.*s' is not supported (gpt-2, smollm, starcoder, "
                         "llama-bpe, qwen2, gpt-4o)",
                         static_cast<int>(std::min<size_t>(name.size(), 64)), name.data());
  }
  return Status::Ok();
}

}  // namespace

Status Tokenizer::Init(const TokenizerSpec& spec, size_t max_text_bytes) {
  initialized_ = false;
  // Drop whatever a previous Init of the other model kind allocated.
  bpe_ = text::BpeEncoder();
  merges_ = text::MergeTable();
  spm_vocab_ = text::SpmVocab();
  spm_ = text::SpmEncoder();
  normalized_ = std::vector<char>();
  normal_index_ = text::TokenIndex();
  spm_merges_ = false;
  fuse_unk_ = false;
  prefix_always_added_ = false;
  split_at_metaspace_ = false;
  space_prefix_ = SpacePrefix::kNever;
  ignore_merges_ = spec.ignore_merges;
  nfc_enabled_ = spec.nfc;
  nfc_ = text::NfcNormalizer();
  decode_strip_leading_ = spec.decode_strip_leading;
  if (spec.model == "gpt2") {
    model_ = Model::kBpe;
    if (spec.has_pre_kind) {
      pre_ = spec.pre_kind;
    } else {
      bool ignore_merges = false;
      STATICLM_RETURN_IF_ERROR(PreTokenizerOfGgufName(spec.pre, &pre_, &ignore_merges));
      ignore_merges_ = ignore_merges_ || ignore_merges;
    }
  } else if (spec.model == "llama") {
    model_ = Model::kSpm;
    // Merge lists come with tokenizer.json (and its space rules); a GGUF SentencePiece
    // vocabulary merges by score, and llama.cpp ignores merges there.
    if (!spec.merges.empty() && !spec.has_space_rules) {
      return Status::Error(StatusCode::kUnsupported,
                           "tokenizer.ggml.merges in a 'llama' (SentencePiece) vocabulary is "
                           "not supported");
    }
  } else {
    return Status::Error(StatusCode::kUnsupported,
                         "tokenizer model '%.*s' is not supported ('gpt2' byte-level BPE, "
                         "'llama' SentencePiece)",
                         static_cast<int>(spec.model.size()), spec.model.data());
  }
  if (max_text_bytes == 0 || max_text_bytes > (size_t{1} << 30)) {
    return Status::Error(StatusCode::kInvalidArgument, "max_text_bytes %zu is outside 1..2^30",
                         max_text_bytes);
  }
  STATICLM_RETURN_IF_ERROR(InitVocabulary(spec));
  // NFC may lengthen a stretch (at most kNfcMaxExpansion-fold); the encoders see its output.
  size_t max_stretch = max_text_bytes;
  if (nfc_enabled_) {
    STATICLM_RETURN_IF_ERROR(nfc_.Init(max_text_bytes));
    max_stretch = max_text_bytes * text::kNfcMaxExpansion;
  }
  if (model_ == Model::kBpe) {
    STATICLM_RETURN_IF_ERROR(InitMerges(spec));
    STATICLM_RETURN_IF_ERROR(bpe_.Init(max_stretch));
    if (ignore_merges_) STATICLM_RETURN_IF_ERROR(InitNormalIndex());
  } else {
    STATICLM_RETURN_IF_ERROR(InitSpm(spec, max_stretch));
  }
  STATICLM_RETURN_IF_ERROR(InitSpecials());
  max_text_bytes_ = max_text_bytes;
  add_bos_ = spec.add_bos;
  initialized_ = true;
  return Status::Ok();
}

// The bytes token i (of `type`, text `t`) stands for, written to out; *status is set to an
// error when a byte-level spelling is invalid.
size_t Tokenizer::DecodeTokenBytes(size_t i, TokenType type, std::string_view t, char* out,
                                   size_t cap, Status* status) const {
  size_t len = 0;
  if (type == TokenType::kByte && ParseByteToken(t, out)) return 1;
  if (type == TokenType::kControl) {
    if (!t.empty()) std::memcpy(out, t.data(), t.size());
    return t.size();
  }
  if (model_ == Model::kSpm) return text::UnescapeMetaSpace(t, out);
  if (type != TokenType::kNormal) {
    if (!t.empty()) std::memcpy(out, t.data(), t.size());
    return t.size();
  }
  if (!text::DecodeByteLevel(t, out, cap, &len)) {
    *status =
        Status::Error(StatusCode::kFormatError, "token %zu ('%.*s') is not byte-level spelled text",
                      i, static_cast<int>(std::min<size_t>(t.size(), 64)), t.data());
  }
  return len;
}

Status Tokenizer::InitVocabulary(const TokenizerSpec& spec) {
  const size_t n = spec.tokens.size();
  if (n == 0 || n > (size_t{1} << 30)) {
    return Status::Error(StatusCode::kFormatError, "vocabulary size %zu is invalid", n);
  }
  if (!spec.token_flags.empty() && spec.token_flags.size() != n) {
    return Status::Error(StatusCode::kFormatError, "%zu token flags for %zu tokens",
                         spec.token_flags.size(), n);
  }
  if (!spec.token_types.empty() && spec.token_types.size() != n) {
    return Status::Error(StatusCode::kFormatError, "%zu token types for %zu tokens",
                         spec.token_types.size(), n);
  }
  size_t total = 0;
  for (std::string_view t : spec.tokens) total += t.size();
  if (total > UINT32_MAX) {
    return Status::Error(StatusCode::kFormatError, "vocabulary text is %zu bytes (limit 4 GiB)",
                         total);
  }
  text_.assign(total, 0);
  bytes_.assign(total, 0);  // decoded bytes are never longer than their spelling
  text_offsets_.assign(n + 1, 0);
  bytes_offsets_.assign(n + 1, 0);
  attrs_.assign(n, 0);
  max_token_bytes_ = 0;
  size_t text_pos = 0;
  size_t bytes_pos = 0;
  for (size_t i = 0; i < n; ++i) {
    const std::string_view t = spec.tokens[i];
    const auto type =
        spec.token_types.empty() ? TokenType::kNormal : static_cast<TokenType>(spec.token_types[i]);
    if (!t.empty()) std::memcpy(text_.data() + text_pos, t.data(), t.size());
    Status decoded = Status::Ok();
    // data() + pos, not &bytes_[pos]: the vector is empty when every token is "" (found by a
    // 2.3M-execution gguf_fuzz run: a reference to element 0 of an empty vector) and pos may be
    // one past its end.
    const size_t len =
        DecodeTokenBytes(i, type, t, bytes_.data() + bytes_pos, total - bytes_pos, &decoded);
    STATICLM_RETURN_IF_ERROR(decoded);
    if (type == TokenType::kNormal) attrs_[i] |= kAttrNormal;
    // The unknown token's text ("<unk>") is parsed as that token, as llama.cpp and
    // transformers (where it is a special added token) do.
    if (type == TokenType::kControl || type == TokenType::kUnknown) attrs_[i] |= kAttrControl;
    if (type == TokenType::kUserDefined) attrs_[i] |= kAttrUserDefined;
    const uint8_t flags = spec.token_flags.empty() ? 0 : spec.token_flags[i];
    if ((flags & kTokenLstrip) != 0) attrs_[i] |= kAttrLstrip;
    if ((flags & kTokenRstrip) != 0) attrs_[i] |= kAttrRstrip;
    text_pos += t.size();
    bytes_pos += len;
    text_offsets_[i + 1] = static_cast<uint32_t>(text_pos);
    bytes_offsets_[i + 1] = static_cast<uint32_t>(bytes_pos);
    max_token_bytes_ = std::max(max_token_bytes_, len);
  }

  for (int32_t& id : byte_ids_) id = -1;
  for (size_t i = n; i-- > 0;) {  // the lowest id wins when two tokens spell one byte
    const std::string_view b = TokenBytesView(static_cast<int32_t>(i));
    if ((attrs_[i] & kAttrNormal) != 0 && b.size() == 1)
      byte_ids_[static_cast<uint8_t>(b[0])] = static_cast<int32_t>(i);
  }
  const auto valid_or_absent = [n](int32_t id) { return id >= -1 && id < static_cast<int64_t>(n); };
  if (!valid_or_absent(spec.bos_id) || !valid_or_absent(spec.eos_id) ||
      !valid_or_absent(spec.eot_id) || !valid_or_absent(spec.unk_id)) {
    return Status::Error(
        StatusCode::kFormatError,
        "special token id out of range (bos %d, eos %d, eot %d, unk %d; vocab %zu)", spec.bos_id,
        spec.eos_id, spec.eot_id, spec.unk_id, n);
  }
  if (spec.add_bos && spec.bos_id < 0) {
    return Status::Error(StatusCode::kFormatError, "add_bos_token is set but there is no BOS id");
  }
  bos_id_ = spec.bos_id;
  eos_id_ = spec.eos_id;
  unk_id_ = spec.unk_id;
  if (eos_id_ >= 0) attrs_[eos_id_] |= kAttrEndOfGen;
  if (spec.eot_id >= 0) attrs_[spec.eot_id] |= kAttrEndOfGen;
  for (size_t i = 0; i < n; ++i) {
    if ((attrs_[i] & kAttrControl) == 0) continue;
    for (std::string_view eog : kEndOfGenerationTexts) {
      if (TokenText(static_cast<int32_t>(i)) == eog) attrs_[i] |= kAttrEndOfGen;
    }
  }
  return Status::Ok();
}

// Normal (and byte and unknown) tokens by what a piece of text is matched against: the bytes
// they stand for (byte-level BPE) or their spelling (SentencePiece-style).
Status Tokenizer::InitNormalIndex() {
  const bool by_bytes = model_ == Model::kBpe;
  const text::SpellingTable table{by_bytes ? bytes_.data() : text_.data(),
                                  by_bytes ? bytes_offsets_.data() : text_offsets_.data(),
                                  attrs_.size()};
  STATICLM_RETURN_IF_ERROR(normal_index_.Init(table, attrs_.size()));
  for (size_t i = attrs_.size(); i-- > 0;) {  // the lowest id wins a shared text
    const bool special = (attrs_[i] & (kAttrControl | kAttrUserDefined)) != 0;
    if (!special && (by_bytes ? (attrs_[i] & kAttrNormal) != 0 : true)) {
      normal_index_.Insert(static_cast<int32_t>(i));
    }
  }
  return Status::Ok();
}

Status Tokenizer::InitMerges(const TokenizerSpec& spec) {
  // Normal tokens by the bytes they stand for; init-only, so a hash map is fine here.
  std::unordered_map<std::string_view, int32_t> by_bytes;
  by_bytes.reserve(attrs_.size());
  for (size_t i = 0; i < attrs_.size(); ++i) {
    if ((attrs_[i] & kAttrNormal) == 0) continue;
    by_bytes.emplace(TokenBytesView(static_cast<int32_t>(i)), static_cast<int32_t>(i));
  }
  STATICLM_RETURN_IF_ERROR(merges_.Init(spec.merges.size()));
  std::string left(max_token_bytes_ * 2 + 8, '\0');
  std::string right(left.size(), '\0');
  std::string joined;
  for (size_t r = 0; r < spec.merges.size(); ++r) {
    const std::string_view m = spec.merges[r];
    const size_t space = m.find(' ');
    size_t nl = 0;
    size_t nr = 0;
    int32_t ids[3] = {-1, -1, -1};
    if (space != std::string_view::npos &&
        text::DecodeByteLevel(m.substr(0, space), left.data(), left.size(), &nl) &&
        text::DecodeByteLevel(m.substr(space + 1), right.data(), right.size(), &nr)) {
      joined.assign(left.data(), nl).append(right.data(), nr);
      const std::string_view parts[3] = {std::string_view(left.data(), nl),
                                         std::string_view(right.data(), nr), joined};
      for (int k = 0; k < 3; ++k) {
        auto it = by_bytes.find(parts[k]);
        if (it != by_bytes.end()) ids[k] = it->second;
      }
    }
    if (ids[0] < 0 || ids[1] < 0 || ids[2] < 0) {
      return Status::Error(StatusCode::kFormatError,
                           "merge %zu ('%.*s') does not join two vocabulary tokens into a third", r,
                           static_cast<int>(std::min<size_t>(m.size(), 64)), m.data());
    }
    // A pair listed twice keeps its first (lowest) rank.
    merges_.Insert(ids[0], ids[1], static_cast<int32_t>(r), ids[2]);
  }
  return Status::Ok();
}

}  // namespace staticlm
