// Model: loading a GGUF file's config, tokenizer and chat format, and choosing another chat
// format (runtime/tokenizer/chat_formats.h). Init only, except Fingerprint's cached value.
#include "runtime/engine/model.h"

#include "runtime/model/model_hash.h"
#include "runtime/tokenizer/tokenizer_from_gguf.h"

namespace staticlm {

Status Model::Load(const char* path, size_t max_prompt_bytes) {
  STATICLM_RETURN_IF_ERROR(file_.Open(path));  // its errors name the file already
  Status s = ReadContents(max_prompt_bytes);
  if (!s.ok()) return Status::Error(s.code(), "%s: %s", path, s.message());
  return Status::Ok();
}

Status Model::ReadContents(size_t max_prompt_bytes) {
  STATICLM_RETURN_IF_ERROR(ReadModelConfig(file_, &config_));
  STATICLM_RETURN_IF_ERROR(InitTokenizerFromGguf(file_, max_prompt_bytes, &tokenizer_));
  if (tokenizer_.vocab_size() != config_.vocab_size) {
    return Status::Error(StatusCode::kFormatError,
                         "tokenizer has %d tokens but token_embd.weight has %d rows",
                         tokenizer_.vocab_size(), config_.vocab_size);
  }
  // A base model (Gemma 3 270M) has no template, and a template may be of no known family:
  // either way plain prompts run, and chat says why not.
  return InitChatTemplateFromGguf(file_, ChatBosText(), &chat_template_);
}

std::string_view Model::ChatBosText() const {
  // Tokenizer::Encode already starts with BOS: writing it as text too would double it.
  if (tokenizer_.add_bos() || tokenizer_.bos_id() < 0) return {};
  return tokenizer_.TokenText(tokenizer_.bos_id());
}

Status Model::SetChatFormat(const char* name) {
  if (name == nullptr || name[0] == '\0') {
    return InitChatTemplateFromGguf(file_, ChatBosText(), &chat_template_);
  }
  return chat_template_.InitFormat(name, ChatBosText());
}

uint64_t Model::Fingerprint() const {
  if (!have_fingerprint_) {
    fingerprint_ = FingerprintBytes(file_.file_data(), file_.file_bytes());
    have_fingerprint_ = true;
  }
  return fingerprint_;
}

}  // namespace staticlm
