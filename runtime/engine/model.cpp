// Model: loading a GGUF file's config, tokenizer and chat format, and choosing another chat
// format (runtime/tokenizer/chat_formats.h). Init only, except Fingerprint's cached value.
#include "runtime/engine/model.h"

#include "runtime/model/model_hash.h"
#include "runtime/tokenizer/tokenizer_from_gguf.h"

namespace staticlm {

Status Model::Load(const char* path, size_t max_prompt_bytes, const char* quantize) {
  // Its errors name the file (or the folder's file) already.
  STATICLM_RETURN_IF_ERROR(hf::OpenModelDescription(path, quantize, &folder_, &file_));
  Status s = ReadContents(path, max_prompt_bytes);
  if (!s.ok()) return Status::Error(s.code(), "%s: %s", path, s.message());
  return Status::Ok();
}

Status Model::ReadContents(const char* path, size_t max_prompt_bytes) {
  STATICLM_RETURN_IF_ERROR(ReadModelConfig(file_, &config_));
  is_folder_ = hf::IsDirectory(path);
  if (is_folder_) {
    config_.rope_halves = true;  // safetensors' q and k are not permuted
    fingerprint_ = folder_.fingerprint();
    have_fingerprint_ = true;
    return InitFolderTokenizer(path, max_prompt_bytes);
  }
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

Status Model::InitFolderTokenizer(const char* dir, size_t max_prompt_bytes) {
  // The one place a folder's tokenizer is read: tokenizer.json (and tokenizer_config.json, with
  // the chat template) into tokenizer_ and chat_template_, as InitTokenizerFromGguf and
  // InitChatTemplateFromGguf do for a file. Until that reader is here, the folder runs on token
  // ids and every text call returns text_status_, which says why; a tokenizer.json the reader
  // refuses should end the same way (its one-line error in text_status_), not fail the load.
  (void)max_prompt_bytes;
  text_status_ =
      Status::Error(StatusCode::kUnsupported,
                    "%s: reading tokenizer.json is not supported yet; pass token ids", dir);
  return Status::Ok();
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
