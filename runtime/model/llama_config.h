// The hyperparameters of a Llama-architecture model, read from GGUF metadata.
#pragma once

#include <cstdint>

#include "platform/status.h"

namespace staticlm {
namespace gguf {
class GgufFile;
}

struct LlamaConfig {
  int32_t n_layers = 0;
  int32_t width = 0;       // embedding length, d
  int32_t n_heads = 0;     // query heads
  int32_t n_kv_heads = 0;  // key/value heads (grouped-query attention)
  int32_t head_dim = 0;    // width / n_heads
  int32_t ffn_width = 0;   // feed-forward hidden size
  int32_t vocab_size = 0;
  int32_t context_length = 0;  // what the model was trained for; limits may not exceed it
  float rope_base = 10000.0f;
  float rms_eps = 1e-5f;
};

// Init only. Fails with kUnsupported for any architecture but "llama", and kFormatError for
// missing or inconsistent hyperparameters (naming the key).
Status ReadLlamaConfig(const gguf::GgufFile& file, LlamaConfig* config);

}  // namespace staticlm
