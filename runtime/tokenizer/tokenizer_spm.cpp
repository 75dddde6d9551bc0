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
#include <cstring>

#include "runtime/tokenizer/tokenizer.h"

namespace staticlm {

namespace {

bool IsGemmaArchitecture(std::string_view a) {
  return a == "gemma" || a == "gemma2" || a == "gemma3";
}

}  // namespace

Status Tokenizer::InitSpm(const TokenizerSpec& spec, size_t max_text_bytes) {
  const bool gemma = IsGemmaArchitecture(spec.architecture);
  text::SpmVocabOptions options;
  options.order = gemma ? text::SpmMergeOrder::kByPosition : text::SpmMergeOrder::kByScore;
  options.respell_space_runs = gemma;
  STATICLM_RETURN_IF_ERROR(spm_vocab_.Init(spec.tokens, spec.token_types, spec.scores, options));
  add_space_prefix_ = !gemma && spec.add_space_prefix;
  // Every input byte gives at most one symbol (a character's token, or one byte token per
  // byte), except a space: "▁" is one symbol when the vocabulary has it, three byte tokens
  // when not. The prefix adds one space.
  const size_t per_byte = spm_vocab_.Find(text::kMetaSpace) >= 0 ? 1 : 3;
  STATICLM_RETURN_IF_ERROR(spm_.Init(per_byte * (max_text_bytes + 1)));
  normalized_.assign(text::kMetaSpace.size() * (max_text_bytes + 1), 0);
  return Status::Ok();
}

Status Tokenizer::EncodeSpmStretch(std::string_view text, bool at_start, int32_t* out,
                                   size_t capacity, size_t* n) {
  if (text.empty()) return Status::Ok();
  char* norm = normalized_.data();
  size_t len = 0;
  const bool starts_with_space =
      text[0] == ' ' || text.substr(0, text::kMetaSpace.size()) == text::kMetaSpace;
  if (add_space_prefix_ && at_start && !starts_with_space) {
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
  size_t written = 0;
  STATICLM_RETURN_IF_ERROR(
      spm_.Encode(spm_vocab_, std::string_view(norm, len), out + *n, capacity - *n, &written));
  *n += written;
  return Status::Ok();
}

}  // namespace staticlm
