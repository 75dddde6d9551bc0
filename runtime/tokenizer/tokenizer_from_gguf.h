// Reading the tokenizer and chat template from a GGUF file's metadata. Init only.
#pragma once

#include <cstddef>

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

// Initialises `chat` from tokenizer.chat_template. kUnsupported when the file has no
// template or one ChatTemplate does not recognise.
Status InitChatTemplateFromGguf(const gguf::GgufFile& file, ChatTemplate* chat);

}  // namespace staticlm
