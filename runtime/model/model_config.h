// The hyperparameters of a decoder model, read from GGUF metadata: what every family shares,
// plus the row of the architecture table that says how the family differs (architecture.h).
#pragma once

#include <cstdint>

#include "platform/status.h"
#include "runtime/model/architecture.h"
#include "runtime/model/rope_scaling.h"

namespace staticlm {
namespace gguf {
class GgufFile;
}

struct ModelConfig {
  const Architecture* arch = nullptr;  // static table row; never null after ReadModelConfig
  int32_t n_layers = 0;
  int32_t width = 0;       // embedding length, d
  int32_t n_heads = 0;     // query heads
  int32_t n_kv_heads = 0;  // key/value heads (grouped-query attention)
  int32_t head_dim = 0;    // <arch>.attention.key_length, else width / n_heads
  // The elements of each head RoPE turns: <arch>.rope.dimension_count (partial RoPE), else
  // head_dim. Frequencies and halves are those of a head this wide; the rest pass through.
  int32_t rope_dims = 0;
  int32_t ffn_width = 0;  // feed-forward hidden size
  int32_t vocab_size = 0;
  int32_t context_length = 0;  // what the model was trained for; limits may not exceed it
  float rope_base = 10000.0f;  // of the global layers
  float rms_eps = 1e-5f;
  // <arch>.attention.sliding_window; 0 when the metadata has none.
  int32_t sliding_window = 0;
  // <arch>.attention.sliding_window_pattern, else the family's (Architecture::swa_pattern).
  int32_t sliding_window_pattern = 0;
  // RoPE rotates halves (x[i], x[i + d/2]) rather than adjacent pairs: the family's default
  // for a GGUF file (Architecture::rope_halves, which says whether the converter permuted q
  // and k), always true for a Hugging Face folder, whose q and k are never permuted.
  bool rope_halves = false;
  // RoPE scaling, in llama.cpp's GGUF conventions. Llama 3's is a rope_freqs.weight tensor
  // (frequency divisors) and Phi-3's longrope two, rope_factors_short/long.weight: the plan
  // builder finds them. Linear and YaRN (<arch>.rope.scaling.type) are numbers, from which
  // Model::Load computes the same divisors (rope_scaling.h) where the file has no
  // rope_freqs.weight. rope_scaling.original_context is <arch>.rope.scaling.
  // original_context_length (0: absent): longrope uses the long factors for a context beyond
  // it, YaRN places its ramp by it. <arch>.rope.scaling.attn_factor (else 1), times YaRN's
  // magnitude for YaRN: cos and sin are multiplied by it.
  float rope_attn_factor = 1.0f;
  RopeScaling rope_scaling;
  // Attention scores are multiplied by this: <arch>.attention.scale, else (width / heads)^-0.5
  // for the family's width-scaled model (Architecture::width_scaled_layers), else
  // head_dim^-0.5.
  float attention_scale = 0.0f;

  // Whether layer `layer` attends over the model's sliding window (in transformers' model; the
  // cache that serves it is the engine's choice): every layer but each pattern-th one.
  bool LayerSlides(int layer) const {
    return sliding_window > 0 &&
           (sliding_window_pattern == 0 || (layer + 1) % sliding_window_pattern != 0);
  }
  // RoPE base of layer `layer`: the family's local base on sliding layers (Gemma 3: 10,000).
  float LayerRopeBase(int layer) const {
    return LayerSlides(layer) && arch->swa_rope_base > 0.0f ? arch->swa_rope_base : rope_base;
  }
  // Whether layer `layer`'s RoPE takes the scaling (the factors and attn_factor): every layer,
  // except the sliding layers of a family whose sliding layers have a RoPE base of their own
  // (Gemma 3's local rotary embedding is never scaled).
  bool LayerRopeScaled(int layer) const {
    return !(LayerSlides(layer) && arch->swa_rope_base > 0.0f);
  }
};

// Init only. kUnsupported for an architecture missing from the table (naming the ones there
// are) or a feature it does not run (partial RoPE, a RoPE scaling type other than linear, YaRN
// and longrope),
// naming the key and its value; kFormatError for missing or inconsistent hyperparameters
// (naming the key).
Status ReadModelConfig(const gguf::GgufFile& file, ModelConfig* config);

}  // namespace staticlm
