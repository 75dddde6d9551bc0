// The q4 attention primitives (fast_attention_q4.h) for arm64 NEON: heads of a multiple of 4
// dims, one head per pass.
#if defined(__aarch64__)
#include <arm_neon.h>

#include <cstdint>
#include <cstring>

#include "backends/cpu/arch/arm/exp_neon.h"
#include "backends/cpu/fast_attention.h"
#include "backends/cpu/fast_attention_q4.h"

namespace staticlm::cpu::detail {
namespace {

using q4::Pass;

// Four values of row i, dims [d, d + 4): codes (2 bytes, low nibble first) or f32.
template <bool kCodes>
inline float32x4_t Load4(const uint8_t* base, int64_t hd, int64_t i, int64_t d) {
  if constexpr (kCodes) {
    uint16_t two = 0;  // unaligned
    std::memcpy(&two, base + (i * hd + d) / 2, sizeof(two));
    const uint8x8_t bytes = vreinterpret_u8_u16(vdup_n_u16(two));
    const uint8x8_t low = vand_u8(bytes, vdup_n_u8(0x0F));
    const uint8x8_t high = vshr_n_u8(bytes, 4);
    const uint16x8_t codes = vmovl_u8(vzip1_u8(low, high));
    return vcvtq_f32_u32(vmovl_u16(vget_low_u16(codes)));
  } else {
    return vld1q_f32(reinterpret_cast<const float*>(base) + i * hd + d);
  }
}

template <bool kCodes>
void Score(const Pass& h, const uint8_t* keys, const float* params, int64_t count, int64_t at,
           float* vmax) {
  const int64_t hd = h.head_dim;
  float bias = 0.0f;
  float folded[256];  // codes: the query times the scales (q · k = Σ folded · codes + q · mins)
  const float* q = h.q[0];
  if constexpr (kCodes) {
    float32x4_t q_min = vdupq_n_f32(0.0f);
    for (int64_t d = 0; d < hd; d += 4) {
      const float32x4_t x = vld1q_f32(h.q[0] + d);
      vst1q_f32(folded + d, vmulq_f32(x, vld1q_f32(params + d)));
      q_min = vfmaq_f32(q_min, x, vld1q_f32(params + hd + d));
    }
    bias = SumNeon(q_min);
    q = folded;
  }
  float m = vmax[0];
  for (int64_t i = 0; i < count; ++i) {
    float32x4_t acc = vdupq_n_f32(0.0f);
    for (int64_t d = 0; d < hd; d += 4) {
      acc = vfmaq_f32(acc, vld1q_f32(q + d), Load4<kCodes>(keys, hd, i, d));
    }
    const float x = (SumNeon(acc) + bias) * h.scale;
    h.scores[0][at + i] = x;
    m = m > x ? m : x;
  }
  vmax[0] = m;
}

// out[0] += Σ_i w(i) · values_i, 32 dims (eight registers) at a time.
template <bool kCodes>
void Add(const Pass& h, const uint8_t* values, const float* params, int64_t count, int64_t at) {
  const int64_t hd = h.head_dim;
  for (int64_t d0 = 0; d0 < hd; d0 += 32) {
    const int blocks = static_cast<int>(hd - d0 >= 32 ? 8 : (hd - d0) / 4);
    float32x4_t acc[8];
    for (int j = 0; j < 8; ++j) {
      acc[j] = j < blocks ? vld1q_f32(h.out[0] + d0 + 4 * j) : vdupq_n_f32(0.0f);
    }
    for (int64_t i = 0; i < count; ++i) {
      const float32x4_t w = vdupq_n_f32(h.scores[0][at + i] * (kCodes ? params[2 * i] : 1.0f));
      for (int j = 0; j < 8; ++j) {
        if (j < blocks) acc[j] = vfmaq_f32(acc[j], w, Load4<kCodes>(values, hd, i, d0 + 4 * j));
      }
    }
    for (int j = 0; j < blocks; ++j) vst1q_f32(h.out[0] + d0 + 4 * j, acc[j]);
  }
}

void ScoreCodes(const Pass& h, const uint8_t* codes, const float* params, int64_t count, int64_t at,
                float* vmax) {
  Score<true>(h, codes, params, count, at, vmax);
}

void ScoreRows(const Pass& h, const float* rows, int64_t count, int64_t at, float* vmax) {
  Score<false>(h, reinterpret_cast<const uint8_t*>(rows), nullptr, count, at, vmax);
}

void AddCodes(const Pass& h, const uint8_t* codes, const float* params, int64_t count, int64_t at,
              float* bias) {
  Add<true>(h, codes, params, count, at);
  q4::AddMins(h, params, count, at, bias);
}

void AddRows(const Pass& h, const float* rows, int64_t count, int64_t at) {
  Add<false>(h, reinterpret_cast<const uint8_t*>(rows), nullptr, count, at);
}

constexpr q4::Kernels kNeon{1, ScoreCodes, ScoreRows, AddCodes, AddRows, ExpSumInPlaceNeon};

}  // namespace

void AttentionQ4Neon(const float* q, int64_t rows, int32_t first_position,
                     const ref::KvCacheView& cache, float* scores, float* out, int64_t head_begin,
                     int64_t head_end) {
  q4::Attend(kNeon, q, rows, first_position, cache, scores, out, head_begin, head_end);
}

}  // namespace staticlm::cpu::detail

#endif
