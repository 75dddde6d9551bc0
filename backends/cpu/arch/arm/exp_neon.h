// e^x on four f32 lanes for the NEON kernels (fast_elementwise_neon.cpp,
// fast_attention_neon.cpp): the arithmetic of exp_avx2.h, so both ISAs agree. arm64 only.
#pragma once

#if defined(__aarch64__)
#include <arm_neon.h>

namespace staticlm::cpu {

// e^x for x in [−87.3, 88.3] (clamped outside), within 2 ulp of expf: x = n·ln2 + r with
// |r| ≤ ln2/2, e^r by its Taylor series to r⁶, then scaled by 2ⁿ through the exponent bits.
inline float32x4_t ExpNeon(float32x4_t x) {
  x = vminq_f32(vmaxq_f32(x, vdupq_n_f32(-87.3f)), vdupq_n_f32(88.3f));
  float32x4_t n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504f)));
  float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693145752f));  // ln2, high bits
  r = vfmsq_f32(r, n, vdupq_n_f32(1.42860677e-6f));            // ln2, the rest
  float32x4_t p = vdupq_n_f32(1.0f / 720.0f);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 120.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 24.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 6.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(0.5f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
  int32x4_t scale = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
  return vmulq_f32(p, vreinterpretq_f32_s32(scale));
}

// Lanes added pairwise in a fixed order.
inline float SumNeon(float32x4_t v) {
  float32x2_t s = vadd_f32(vget_low_f32(v), vget_high_f32(v));
  return vget_lane_f32(vpadd_f32(s, s), 0);
}

// Lanes [0, count) of four set (count ≤ 4), for masking a partial vector.
inline uint32x4_t TailMaskNeon(int64_t count) {
  const uint32_t lanes[4] = {0, 1, 2, 3};
  return vcltq_u32(vld1q_u32(lanes), vdupq_n_u32(static_cast<uint32_t>(count)));
}

// x[i] = e^(x[i] − max_value) for i < n; returns their sum (four lanes, then SumNeon). Softmax
// and both attention kernels share it, so they exponentiate and sum in the same order.
inline float ExpSumInPlaceNeon(float* x, int64_t n, float max_value) {
  const float32x4_t m = vdupq_n_f32(max_value);
  float32x4_t sum = vdupq_n_f32(0.0f);
  const int64_t full = n / 4 * 4;
  for (int64_t i = 0; i < full; i += 4) {
    const float32x4_t e = ExpNeon(vsubq_f32(vld1q_f32(x + i), m));
    vst1q_f32(x + i, e);
    sum = vaddq_f32(sum, e);
  }
  if (full < n) {  // the tail through a padded copy; the unused lanes are not added
    float tail[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int64_t i = full; i < n; ++i) tail[i - full] = x[i];
    float32x4_t e = ExpNeon(vsubq_f32(vld1q_f32(tail), m));
    e = vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(e), TailMaskNeon(n - full)));
    vst1q_f32(tail, e);
    for (int64_t i = full; i < n; ++i) x[i] = tail[i - full];
    sum = vaddq_f32(sum, e);
  }
  return SumNeon(sum);
}

}  // namespace staticlm::cpu

#endif
