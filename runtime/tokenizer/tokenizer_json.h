// Reading a Hugging Face tokenizer.json (and its tokenizer_config.json) into the same
// TokenizerSpec a GGUF file gives, so one Tokenizer serves both. Init only: allocates.
//
// What is read (anything else is a one-line kUnsupported error naming the field and its
// value; a missing or mistyped field a kFormatError naming it):
//   model         BPE only. byte_fallback false: byte-level BPE, which needs a ByteLevel
//                 pre-tokenizer; byte_fallback true: SentencePiece-style BPE over characters
//                 with <0xNN> byte tokens. merges as "a b" strings or [a, b] pairs;
//                 ignore_merges, fuse_unk, unk_token; dropout must be null and
//                 continuing_subword_prefix / end_of_word_suffix empty.
//   normalizer    null, NFC, Prepend("▁"), Replace(" " -> "▁") or a Sequence of them
//                 (byte-level BPE: NFC only).
//   pre_tokenizer ByteLevel (GPT-2 regex, add_prefix_space false); Sequence of
//                 Split(the Llama 3 or Qwen2 regex, Isolated) or Digits(individual_digits)
//                 and then ByteLevel; Metaspace("▁", prepend_scheme, split) or null
//                 (SentencePiece-style).
//   post_processor null, ByteLevel, TemplateProcessing adding one leading special token (the
//                 BOS), or a Sequence of those.
//   decoder       ByteLevel; or a Sequence of ByteFallback, Replace("▁" -> " "), Fuse and
//                 Strip(" ", n, 0) after Fuse (byte_fallback models; a Metaspace decoder
//                 drops every "▁" of the first token, which staticlm does not do).
//   added_tokens  special -> control tokens (matched with parse_special), others user-defined
//                 (always matched); lstrip / rstrip honoured; single_word must be false.
//   tokenizer_config.json (optional): add_bos_token, add_eos_token (must be false),
//                 bos_token, eos_token (a string or {"content": ...}), chat_template.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "platform/status.h"
#include "runtime/tokenizer/tokenizer.h"

namespace staticlm {

// A TokenizerSpec read from JSON, with the strings its views point into.
struct TokenizerJson {
  TokenizerSpec spec;                    // views into the storage below; valid while this lives
  std::string chat_template;             // tokenizer_config.json's chat_template; empty when absent
  std::vector<std::string> token_texts;  // storage: one per id
  std::vector<std::string> merge_texts;  // storage: "left right" by rank
};

// Parses `tokenizer_json` (the bytes of tokenizer.json) and `config_json` (the bytes of
// tokenizer_config.json, or empty when there is none) into `out`. Errors name the file and
// the field, e.g. "tokenizer.json: pre_tokenizer.type 'Whitespace' is not supported".
Status ReadTokenizerJson(std::string_view tokenizer_json, std::string_view config_json,
                         TokenizerJson* out);

// ReadTokenizerJson followed by Tokenizer::Init(spec, max_text_bytes). `chat_template`
// (may be null) receives tokenizer_config.json's chat_template, empty when absent.
Status InitTokenizerFromJson(std::string_view tokenizer_json, std::string_view config_json,
                             size_t max_text_bytes, Tokenizer* tokenizer,
                             std::string* chat_template);

// The same from files: `config_path` may be null (no tokenizer_config.json). kIoError
// naming the path when a file cannot be read.
Status InitTokenizerFromJsonFiles(const char* tokenizer_json_path, const char* config_path,
                                  size_t max_text_bytes, Tokenizer* tokenizer,
                                  std::string* chat_template);

}  // namespace staticlm
