// Fast element-wise kernels (RMSNorm, SiLU-multiply, GELU-multiply, softmax) with the contracts of
// their ref:: counterparts in reference_kernels.h, chosen once at init from the CPU's features.
//
// They differ from the reference only in the order of float additions (RMSNorm's and
// softmax's sums run in 8 lanes, added pairwise at the end) and in e^x, which they compute
// with a polynomial within 2 ulp of expf. GELU-multiply computes the reference's tanh form as
// x · up / (1 + e^(−2u)) (the same function: 1 + tanh(u) = 2 / (1 + e^(−2u))), within about
// 1e-6 · |x · up| of the exact value, as the reference is. Each output depends only on its own row,
// so results do not depend on how rows are split between threads. None allocates.
#pragma once

#include <cstdint>

#include "platform/cpu_features.h"

namespace staticlm::cpu {

struct ElementwiseKernels {
  // y (rows, n) = x / sqrt(mean(x²) + eps) · weight
  void (*rms_norm)(const float* x, const float* weight, int64_t rows, int64_t n, float eps,
                   float* y);
  // gate[i] = silu(gate[i]) · up[i]
  void (*silu_mul)(float* gate, const float* up, int64_t n);
  // x[i] = e^(x[i] − max) / Σ e^(x[j] − max)
  void (*softmax)(float* x, int64_t n);
  const char* name;  // "avx2", "neon" or "reference"
  // gate[i] = gelu_tanh(gate[i]) · up[i]; SelectElementwise never leaves it null (the
  // reference where an ISA has no kernel).
  void (*gelu_mul)(float* gate, const float* up, int64_t n) = nullptr;
};

// The reference kernels when `reference` is set or the CPU has neither AVX2 + FMA nor NEON;
// else the AVX2 or NEON ones. Init only.
ElementwiseKernels SelectElementwise(const CpuFeatures& features, bool reference);

// The AVX2 kernels, or kernels with null members when this build has none (non-x86). For
// tests; the caller checks the CPU.
ElementwiseKernels Avx2Elementwise();

// The NEON kernels (backends/cpu/arch/arm/fast_elementwise_neon.cpp), or null members when this
// build has none (non-arm64). For tests; the caller checks the CPU.
ElementwiseKernels NeonElementwise();

}  // namespace staticlm::cpu
