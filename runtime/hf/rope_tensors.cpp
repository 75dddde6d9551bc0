#include "runtime/hf/rope_tensors.h"

#include <cmath>

namespace staticlm::hf {

std::vector<float> Llama3RopeFreqs(const Llama3Scaling& s, float rope_base, int head_dim) {
  // The converter's arithmetic: f32 frequencies (torch), the rest in double (Python floats).
  std::vector<float> out(static_cast<size_t>(head_dim / 2));
  const double low_wavelen = s.original_context / s.low_freq_factor;
  const double high_wavelen = s.original_context / s.high_freq_factor;
  for (int i = 0; i < head_dim / 2; ++i) {
    const float freq =
        1.0f / std::pow(rope_base, static_cast<float>(2 * i) / static_cast<float>(head_dim));
    const double wavelen = 2.0 * M_PI / freq;
    double f = 1.0;
    if (wavelen > low_wavelen) {
      f = s.factor;
    } else if (wavelen >= high_wavelen) {
      const double smooth = (s.original_context / wavelen - s.low_freq_factor) /
                            (s.high_freq_factor - s.low_freq_factor);
      f = 1.0 / ((1.0 - smooth) / s.factor + smooth);
    }
    out[static_cast<size_t>(i)] = static_cast<float>(f);
  }
  return out;
}

float LongropeAttnFactor(double context, double original_context) {
  const double scale = context / original_context;
  if (!(scale > 1.0)) return 1.0f;
  return static_cast<float>(std::sqrt(1.0 + std::log(scale) / std::log(original_context)));
}

}  // namespace staticlm::hf
