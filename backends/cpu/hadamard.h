// The normalised Walsh-Hadamard transform of a head's row, in place. It is orthonormal and its
// own inverse (H = Hᵀ, H·H = I), so dot(H·q, H·k) = dot(q, k). The q8 KV cache stores H·k and
// H·v: an outlier channel's energy is spread over the whole row, so the per-row int8 step is
// set by the row's norm rather than by its largest channel.
//
// A row of n = 2^k floats is one block. Any other n is split by its binary digits into blocks
// of powers of two, largest first (Phi-3's 96 = 64 + 32, 80 = 64 + 16), each transformed on
// its own: the block-diagonal matrix is still orthonormal and its own inverse, and each outlier
// is spread over its block. Every backend splits the same way (contract/plan.h, kQ8).
#pragma once

#include <cmath>
#include <cstdint>

namespace staticlm::cpu {

// The largest power of two ≤ n (n ≥ 1): the next block of a row with n values left.
inline int64_t HadamardBlock(int64_t n) {
  int64_t block = 1;
  while (block * 2 <= n) block *= 2;
  return block;
}

// The transform of one block of n = 2^k floats; the factor is 1/√n as a float.
inline void HadamardPowerOfTwo(float* x, int64_t n) {
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

inline void Hadamard(float* x, int64_t n) {
  for (int64_t at = 0; at < n;) {
    const int64_t block = HadamardBlock(n - at);
    HadamardPowerOfTwo(x + at, block);
    at += block;
  }
}

}  // namespace staticlm::cpu
