// RoPE scaling that transformers and llama.cpp compute from a few numbers rather than store:
// linear (position interpolation) and YaRN. Both become a divisor per frequency pair, the form
// Llama 3's rope_freqs.weight already has, so every backend's RoPE kernel runs them unchanged:
// pair i turns by position · base^(−2i/head_dim) / factors[i]. Init only.
#pragma once

#include <cstdint>
#include <vector>

namespace staticlm {

enum class RopeScalingKind : uint8_t {
  kNone,    // no scaling, or one given as tensors (Llama 3's rope_freqs, Phi-3's longrope)
  kLinear,  // every frequency divided by the factor
  kYarn,    // low frequencies divided by the factor, high ones kept, a linear ramp between
};

struct RopeScaling {
  RopeScalingKind kind = RopeScalingKind::kNone;
  float factor = 1.0f;
  int32_t original_context = 0;  // the context trained for (YaRN; longrope picks its factors)
  float beta_fast = 32.0f;       // YaRN: rotations where the ramp ends (frequencies kept)
  float beta_slow = 1.0f;        // YaRN: rotations where it starts (frequencies divided)
};

// The divisor of each of the head_dim / 2 frequency pairs. YaRN's ramp runs between the pair
// indices where the original context turns beta_fast and beta_slow times, floored and ceiled
// (transformers' default `truncate`, llama.cpp's ggml_rope_yarn_corr_dims).
std::vector<float> RopeScalingFactors(const RopeScaling& s, float rope_base, int head_dim);

// YaRN's factor on cos and sin: 1 + 0.1 · mscale · ln(factor) (1 for a factor ≤ 1);
// transformers' get_mscale, whose ratio for mscale and mscale_all_dim is DeepSeek's form.
float YarnMagnitude(float factor, float mscale = 1.0f);

}  // namespace staticlm
