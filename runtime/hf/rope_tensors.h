// The RoPE tensors llama.cpp's converter computes from config.json's rope scaling and a
// folder lacks, made with the converter's arithmetic: Llama 3's rope_freqs (a divisor per
// frequency pair) and Phi-3's longrope factors (rope_factors_long/short, copied from the
// config). Init only.
#pragma once

#include <vector>

namespace staticlm::hf {

struct Llama3Scaling {
  double factor = 8.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  double original_context = 8192.0;
};

// rope_freqs.weight: head_dim / 2 values.
std::vector<float> Llama3RopeFreqs(const Llama3Scaling& s, float rope_base, int head_dim);

// rope.scaling.attn_factor for longrope: sqrt(1 + ln(scale) / ln(original)) with
// scale = context / original, 1 when the context does not exceed the original.
float LongropeAttnFactor(double context, double original_context);

}  // namespace staticlm::hf
