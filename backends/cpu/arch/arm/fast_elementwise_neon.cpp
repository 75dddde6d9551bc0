// The NEON element-wise kernels (arm64): the AVX2 kernels' arithmetic (fast_elementwise.cpp) on
// four lanes, with the contracts of fast_elementwise.h.
#include "backends/cpu/fast_elementwise.h"

#if defined(__aarch64__)
#include <arm_neon.h>

#include <cmath>

#include "backends/cpu/arch/arm/exp_neon.h"

namespace staticlm::cpu {
namespace {

void RmsNormNeon(const float* x, const float* weight, int64_t rows, int64_t n, float eps,
                 float* y) {
  const int64_t full = n / 4 * 4;
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    float32x4_t sum = vdupq_n_f32(0.0f);
    for (int64_t i = 0; i < full; i += 4) {
      float32x4_t v = vld1q_f32(xr + i);
      sum = vfmaq_f32(sum, v, v);
    }
    float tail = 0.0f;
    for (int64_t i = full; i < n; ++i) tail += xr[i] * xr[i];
    const float inv_rms = 1.0f / std::sqrt((SumNeon(sum) + tail) / static_cast<float>(n) + eps);
    const float32x4_t scale = vdupq_n_f32(inv_rms);
    for (int64_t i = 0; i < full; i += 4) {
      vst1q_f32(yr + i, vmulq_f32(vmulq_f32(vld1q_f32(xr + i), scale), vld1q_f32(weight + i)));
    }
    for (int64_t i = full; i < n; ++i) yr[i] = xr[i] * inv_rms * weight[i];
  }
}

void SiluMulNeon(float* gate, const float* up, int64_t n) {
  const int64_t full = n / 4 * 4;
  const float32x4_t one = vdupq_n_f32(1.0f);
  for (int64_t i = 0; i < full; i += 4) {
    float32x4_t g = vld1q_f32(gate + i);
    float32x4_t silu = vdivq_f32(g, vaddq_f32(one, ExpNeon(vnegq_f32(g))));
    vst1q_f32(gate + i, vmulq_f32(silu, vld1q_f32(up + i)));
  }
  for (int64_t i = full; i < n; ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void SoftmaxNeon(float* x, int64_t n) {
  const int64_t full = n / 4 * 4;
  float max_value = -INFINITY;
  float32x4_t vmax = vdupq_n_f32(-INFINITY);
  for (int64_t i = 0; i < full; i += 4) vmax = vmaxq_f32(vmax, vld1q_f32(x + i));
  max_value = vmaxvq_f32(vmax);
  for (int64_t i = full; i < n; ++i) max_value = x[i] > max_value ? x[i] : max_value;
  const float inv = 1.0f / ExpSumInPlaceNeon(x, n, max_value);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

}  // namespace

ElementwiseKernels NeonElementwise() {
  return {RmsNormNeon, SiluMulNeon, SoftmaxNeon, "neon", nullptr};  // GELU: the reference
}

}  // namespace staticlm::cpu

#else

namespace staticlm::cpu {

ElementwiseKernels NeonElementwise() {
  return {nullptr, nullptr, nullptr, "neon", nullptr};
}

}  // namespace staticlm::cpu

#endif
