#include "runtime/model/llama_config.h"

#include <string_view>

#include "runtime/gguf/gguf_file.h"

namespace staticlm {
namespace {

Status ReadPositive(const gguf::GgufFile& file, const char* key, int32_t* out) {
  uint32_t value = 0;
  STATICLM_RETURN_IF_ERROR(file.GetU32(key, &value));
  if (value == 0 || value > (1u << 24)) {
    return Status::Error(StatusCode::kFormatError, "%s = %u is out of range", key, value);
  }
  *out = static_cast<int32_t>(value);
  return Status::Ok();
}

Status CheckConsistency(const LlamaConfig& c) {
  if (c.width % c.n_heads != 0) {
    return Status::Error(StatusCode::kFormatError,
                         "embedding length %d is not a multiple of head count %d", c.width,
                         c.n_heads);
  }
  if (c.n_heads % c.n_kv_heads != 0) {
    return Status::Error(StatusCode::kFormatError,
                         "head count %d is not a multiple of KV head count %d", c.n_heads,
                         c.n_kv_heads);
  }
  if (c.head_dim % 2 != 0 || c.head_dim > 256) {
    return Status::Error(StatusCode::kUnsupported, "head size %d is not even and at most 256",
                         c.head_dim);
  }
  if (!(c.rope_base > 0.0f) || !(c.rms_eps > 0.0f)) {
    return Status::Error(StatusCode::kFormatError, "rope base or RMS epsilon is not positive");
  }
  return Status::Ok();
}

}  // namespace

Status ReadLlamaConfig(const gguf::GgufFile& file, LlamaConfig* config) {
  std::string_view arch;
  STATICLM_RETURN_IF_ERROR(file.GetString("general.architecture", &arch));
  if (arch != "llama") {
    return Status::Error(StatusCode::kUnsupported,
                         "architecture '%.*s' is not supported (only 'llama')",
                         static_cast<int>(arch.size() > 40 ? 40 : arch.size()), arch.data());
  }
  LlamaConfig c;
  STATICLM_RETURN_IF_ERROR(ReadPositive(file, "llama.block_count", &c.n_layers));
  STATICLM_RETURN_IF_ERROR(ReadPositive(file, "llama.embedding_length", &c.width));
  STATICLM_RETURN_IF_ERROR(ReadPositive(file, "llama.attention.head_count", &c.n_heads));
  STATICLM_RETURN_IF_ERROR(ReadPositive(file, "llama.attention.head_count_kv", &c.n_kv_heads));
  STATICLM_RETURN_IF_ERROR(ReadPositive(file, "llama.feed_forward_length", &c.ffn_width));
  STATICLM_RETURN_IF_ERROR(ReadPositive(file, "llama.context_length", &c.context_length));
  if (file.FindKey("llama.rope.freq_base") != nullptr) {
    STATICLM_RETURN_IF_ERROR(file.GetF32("llama.rope.freq_base", &c.rope_base));
  }
  STATICLM_RETURN_IF_ERROR(file.GetF32("llama.attention.layer_norm_rms_epsilon", &c.rms_eps));
  c.head_dim = c.width / c.n_heads;
  STATICLM_RETURN_IF_ERROR(CheckConsistency(c));
  if (file.FindKey("llama.rope.dimension_count") != nullptr) {
    uint32_t rope_dims = 0;
    STATICLM_RETURN_IF_ERROR(file.GetU32("llama.rope.dimension_count", &rope_dims));
    if (static_cast<int32_t>(rope_dims) != c.head_dim) {
      return Status::Error(StatusCode::kUnsupported,
                           "partial RoPE (%u of %d dims) is not supported", rope_dims, c.head_dim);
    }
  }
  // The vocabulary size is the embedding table's row count; the metadata key is optional.
  const gguf::TensorInfo* embd = file.FindTensor("token_embd.weight");
  if (embd == nullptr) {
    return Status::Error(StatusCode::kFormatError, "missing tensor 'token_embd.weight'");
  }
  if (embd->n_dims != 2 || embd->ne[0] != c.width || embd->ne[1] <= 0 || embd->ne[1] > (1 << 24)) {
    return Status::Error(StatusCode::kFormatError, "token_embd.weight has shape [%lld, %lld]",
                         static_cast<long long>(embd->ne[0]), static_cast<long long>(embd->ne[1]));
  }
  c.vocab_size = static_cast<int32_t>(embd->ne[1]);
  *config = c;
  return Status::Ok();
}

}  // namespace staticlm
