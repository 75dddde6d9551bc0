// Reading the tokenizer and chat template from a GGUF file's metadata. Init only.
#pragma once

#include <cstddef>
#include <string_view>

#include "platform/status.h"
#include "runtime/tokenizer/chat_template.h"
#include "runtime/tokenizer/tokenizer.h"

namespace staticlm {
namespace gguf {
class GgufFile;
}

// Fills `spec` from tokenizer.ggml.* keys. Its views point into `file`, which must outlive
// the spec (not the Tokenizer: Init copies). Allocates. kFormatError for a missing or
// mistyped key (named by the reader); optional keys (general.architecture, merges, scores,
// token_type, bos/eos/eot/unknown ids, add_bos_token) default to absent, add_space_prefix
// to true. Whether the keys a model needs are there (scores for "llama") is Init's check.
Status ReadTokenizerSpec(const gguf::GgufFile& file, TokenizerSpec* spec);

// ReadTokenizerSpec followed by Tokenizer::Init.
Status InitTokenizerFromGguf(const gguf::GgufFile& file, size_t max_text_bytes,
                             Tokenizer* tokenizer);

// Initialises `chat` from tokenizer.chat_template, when ChatTemplate recognises it (see
// chat_template.h for `bos_text`). A file without a template, or with one no format
// recognises, is not an error (plain prompts still run): `chat` is left without a format and
// its FormatChat says why in one line, naming --chat-template and, when the file has none,
// the format of the model's family ("gemma" for gemma3). Errors only for mistyped keys.
Status InitChatTemplateFromGguf(const gguf::GgufFile& file, std::string_view bos_text,
                                ChatTemplate* chat);

// The same for a template given as text (a Hugging Face folder's tokenizer_config.json
// chat_template; empty when it has none), for a model of `architecture`. Never fails.
void InitChatTemplateFromText(std::string_view architecture, std::string_view text,
                              std::string_view bos_text, ChatTemplate* chat);

}  // namespace staticlm
