// Model: loading a GGUF file's config, tokenizer and chat format, and choosing another chat
// format (runtime/tokenizer/chat_formats.h). Init only, except Fingerprint's cached value.
#include "runtime/engine/model.h"

#include <unistd.h>

#include <string>
#include <vector>

#include "runtime/model/model_hash.h"
#include "runtime/model/rope_scaling.h"
#include "runtime/tokenizer/tokenizer_from_gguf.h"
#include "runtime/tokenizer/tokenizer_json.h"

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
  STATICLM_RETURN_IF_ERROR(AddRopeScalingFactors());
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

// Linear and YaRN scaling are numbers in the metadata: their frequency divisors become the
// rope_freqs.weight tensor the plan builder takes, as Llama 3's. A Hugging Face folder gets it
// from its config (runtime/hf/hf_config.cpp); a GGUF file, here, after its bytes.
Status Model::AddRopeScalingFactors() {
  if (config_.rope_scaling.kind == RopeScalingKind::kNone) return Status::Ok();
  if (file_.FindTensor("rope_freqs.weight") != nullptr) return Status::Ok();
  const std::vector<float> factors =
      RopeScalingFactors(config_.rope_scaling, config_.rope_base, config_.rope_dims);
  for (float f : factors) {
    if (!(f >= 1.0f && f < 1e6f)) {  // each divisor lies between 1 and the factor
      return Status::Error(StatusCode::kFormatError,
                           "RoPE scaling (factor %g) gives a frequency divisor of %g",
                           config_.rope_scaling.factor, f);
    }
  }
  return file_.AddComputedTensor("rope_freqs.weight", factors.data(), factors.size());
}

Status Model::InitFolderTokenizer(const char* dir, size_t max_prompt_bytes) {
  // The one place a folder's tokenizer is read: tokenizer.json (and tokenizer_config.json, with
  // the chat template) into tokenizer_ and chat_template_, as InitTokenizerFromGguf and
  // InitChatTemplateFromGguf do for a file. A folder whose tokenizer.json is missing or refused
  // still loads and runs on token ids; every text call then returns text_status_, the reader's
  // one-line error. The embedding table may have more rows than the tokenizer has tokens (the
  // published Qwen and Phi-3 folders pad it), never fewer.
  const std::string json = std::string(dir) + "/tokenizer.json";
  const std::string config = std::string(dir) + "/tokenizer_config.json";
  const bool have_config = access(config.c_str(), R_OK) == 0;
  std::string chat;
  Status s = InitTokenizerFromJsonFiles(json.c_str(), have_config ? config.c_str() : nullptr,
                                        max_prompt_bytes, &tokenizer_, &chat);
  if (s.ok() && tokenizer_.vocab_size() > config_.vocab_size) {
    s = Status::Error(StatusCode::kFormatError,
                      "%s has %d tokens, more than the %d rows of the embedding table",
                      json.c_str(), tokenizer_.vocab_size(), config_.vocab_size);
  }
  if (!s.ok()) {
    text_status_ = s;
    return Status::Ok();
  }
  InitChatTemplateFromText(config_.arch->name, chat, ChatBosText(), &chat_template_);
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
