// The normalised Walsh-Hadamard transform of a vector of n = 2^k floats, in place. It is
// orthonormal and its own inverse (H = Hᵀ, H·H = I), so dot(H·q, H·k) = dot(q, k). The q8 KV
// cache stores H·k and H·v: an outlier channel's energy is spread over the whole row, so the
// per-row int8 step is set by the row's norm rather than by its largest channel.
#pragma once

#include <cmath>
#include <cstdint>

namespace staticlm::cpu {

inline bool IsPowerOfTwo(int64_t n) {
  return n > 0 && (n & (n - 1)) == 0;
}

inline void Hadamard(float* x, int64_t n) {
  for (int64_t half = 1; half < n; half *= 2) {
    for (int64_t i = 0; i < n; i += 2 * half) {
      for (int64_t j = i; j < i + half; ++j) {
        const float a = x[j], b = x[j + half];
        x[j] = a + b;
        x[j + half] = a - b;
      }
    }
  }
  const float norm = 1.0f / std::sqrt(static_cast<float>(n));
  for (int64_t i = 0; i < n; ++i) x[i] *= norm;
}

}  // namespace staticlm::cpu
