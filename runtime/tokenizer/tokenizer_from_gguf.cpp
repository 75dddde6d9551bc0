#include "runtime/tokenizer/tokenizer_from_gguf.h"

#include "runtime/gguf/gguf_file.h"

namespace staticlm {

namespace {

// Reads an optional token id: absent keys leave -1.
Status ReadOptionalId(const gguf::GgufFile& file, std::string_view key, int32_t* id) {
  *id = -1;
  if (file.FindKey(key) == nullptr) return Status::Ok();
  return file.GetI32(key, id);
}

}  // namespace

Status ReadTokenizerSpec(const gguf::GgufFile& file, TokenizerSpec* spec) {
  *spec = TokenizerSpec();
  STATICLM_RETURN_IF_ERROR(file.GetString("tokenizer.ggml.model", &spec->model));
  if (file.FindKey("general.architecture") != nullptr) {
    STATICLM_RETURN_IF_ERROR(file.GetString("general.architecture", &spec->architecture));
  }
  if (file.FindKey("tokenizer.ggml.pre") != nullptr) {
    STATICLM_RETURN_IF_ERROR(file.GetString("tokenizer.ggml.pre", &spec->pre));
  }
  STATICLM_RETURN_IF_ERROR(file.GetStringArray("tokenizer.ggml.tokens", &spec->tokens));
  if (file.FindKey("tokenizer.ggml.merges") != nullptr) {
    STATICLM_RETURN_IF_ERROR(file.GetStringArray("tokenizer.ggml.merges", &spec->merges));
  }
  if (file.FindKey("tokenizer.ggml.scores") != nullptr) {
    STATICLM_RETURN_IF_ERROR(file.GetF32Array("tokenizer.ggml.scores", &spec->scores));
  }
  if (file.FindKey("tokenizer.ggml.token_type") != nullptr) {
    STATICLM_RETURN_IF_ERROR(file.GetI32Array("tokenizer.ggml.token_type", &spec->token_types));
  }
  STATICLM_RETURN_IF_ERROR(ReadOptionalId(file, "tokenizer.ggml.bos_token_id", &spec->bos_id));
  STATICLM_RETURN_IF_ERROR(ReadOptionalId(file, "tokenizer.ggml.eos_token_id", &spec->eos_id));
  STATICLM_RETURN_IF_ERROR(ReadOptionalId(file, "tokenizer.ggml.eot_token_id", &spec->eot_id));
  STATICLM_RETURN_IF_ERROR(ReadOptionalId(file, "tokenizer.ggml.unknown_token_id", &spec->unk_id));
  if (file.FindKey("tokenizer.ggml.add_space_prefix") != nullptr) {
    STATICLM_RETURN_IF_ERROR(
        file.GetBool("tokenizer.ggml.add_space_prefix", &spec->add_space_prefix));
  }
  if (file.FindKey("tokenizer.ggml.add_bos_token") != nullptr) {
    STATICLM_RETURN_IF_ERROR(file.GetBool("tokenizer.ggml.add_bos_token", &spec->add_bos));
  }
  return Status::Ok();
}

Status InitTokenizerFromGguf(const gguf::GgufFile& file, size_t max_text_bytes,
                             Tokenizer* tokenizer) {
  TokenizerSpec spec;
  STATICLM_RETURN_IF_ERROR(ReadTokenizerSpec(file, &spec));
  return tokenizer->Init(spec, max_text_bytes);
}

Status InitChatTemplateFromGguf(const gguf::GgufFile& file, ChatTemplate* chat) {
  if (file.FindKey("tokenizer.chat_template") == nullptr) {
    return Status::Error(StatusCode::kUnsupported, "the model has no tokenizer.chat_template");
  }
  std::string_view text;
  STATICLM_RETURN_IF_ERROR(file.GetString("tokenizer.chat_template", &text));
  return chat->Init(text);
}

}  // namespace staticlm
