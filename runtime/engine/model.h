// Model: what one GGUF file says — the mapped file, its ModelConfig, its tokenizer and its chat
// format — independent of the limits a context runs under (llama.cpp's llama_model, ExecuTorch's
// Program data). Owned by the Engine; everything else borrows it.
//
// Lifetime: Load maps the file and reads everything once (init; allocates). After that the
// model is read-only, with two exceptions that the run phase may touch without allocating: the
// tokenizer's scratch (Encode writes into buffers sized at Load) and the fingerprint's cache
// (computed on first use). SetChatFormat is init only. The mapped file stays valid, and the
// weights in it stay where they are, until the Model is destroyed: backends bind them in place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "platform/status.h"
#include "runtime/gguf/gguf_file.h"
#include "runtime/hf/hf_folder.h"
#include "runtime/model/model_config.h"
#include "runtime/tokenizer/chat_template.h"
#include "runtime/tokenizer/tokenizer.h"

namespace staticlm {

class Model {
 public:
  // Init: maps `path`, reads the config, the tokenizer (whose Encode takes up to
  // `max_prompt_bytes` of text) and the chat template. A missing or unknown template is not
  // an error (chat_template.h says why chat then fails); a tokenizer whose vocabulary differs
  // from the embedding table's rows is. `path` may be a Hugging Face folder
  // (runtime/hf/hf_folder.h), whose weights `quantize` ("q8_0", "q4_0", "q4_k"; nullptr: none) may
  // quantize; a folder whose tokenizer cannot be loaded still loads, and only the text calls
  // fail (text_status()).
  Status Load(const char* path, size_t max_prompt_bytes, const char* quantize = nullptr);

  // Why text cannot be tokenized (a folder without a tokenizer staticlm can read), else Ok.
  // Token ids run either way.
  const Status& text_status() const { return text_status_; }
  bool is_folder() const { return is_folder_; }

  // Init: forces the chat format `name` ("chatml", "gemma"), or with nullptr or "" goes back
  // to the file's template. Allocates. kInvalidArgument for an unknown name.
  Status SetChatFormat(const char* name);

  // The file's fingerprint (runtime/model/model_hash.h), which plan and session files are
  // bound to. The first call reads the whole file (once; a loaded plan file's check makes that
  // call at init); later calls return the cached value. Never allocates.
  uint64_t Fingerprint() const;

  const gguf::GgufFile& file() const { return file_; }
  const ModelConfig& config() const { return config_; }
  Tokenizer& tokenizer() { return tokenizer_; }
  const Tokenizer& tokenizer() const { return tokenizer_; }
  const ChatTemplate& chat_template() const { return chat_template_; }

 private:
  // Load after the file is open: config, tokenizer, chat template (errors without the path).
  Status ReadContents(const char* path, size_t max_prompt_bytes);
  // What the chat template writes for {{ bos_token }}: nothing when the tokenizer prepends BOS.
  std::string_view ChatBosText() const;

  // Init: the folder's tokenizer (tokenizer.json, tokenizer_config.json): the one place a
  // folder's tokenizer and chat template are read.
  Status InitFolderTokenizer(const char* dir, size_t max_prompt_bytes);
  Status AddRopeScalingFactors();

  hf::HfFolder folder_;  // a folder's mapping (file_ points into it); unused for a GGUF file
  gguf::GgufFile file_;
  Status text_status_;
  bool is_folder_ = false;
  ModelConfig config_;
  Tokenizer tokenizer_;
  ChatTemplate chat_template_;
  mutable uint64_t fingerprint_ = 0;  // valid when have_fingerprint_
  mutable bool have_fingerprint_ = false;
};

}  // namespace staticlm
