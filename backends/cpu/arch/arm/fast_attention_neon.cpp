// The NEON attention kernel (arm64): the AVX2 kernel's algorithm (fast_attention.cpp) on four
// lanes. Same contract as ref::Attention up to the order of float additions and e^x (a
// polynomial within 2 ulp of expf); q4 caches are fast_attention_q4_neon.cpp's.
#if defined(__aarch64__)
#include <arm_neon.h>

#include <cmath>
#include <cstring>

#include "backends/cpu/arch/arm/exp_neon.h"
#include "backends/cpu/attention_simd.h"
#include "backends/cpu/fast_attention.h"
#include "backends/cpu/hadamard.h"

namespace staticlm::cpu::detail {
namespace {

// Four values of a row as f32 (q8 values not yet scaled: the caller scales a row's sum).
inline float32x4_t Load4(const KvRows& rows, int64_t index) {
  if (rows.type == DType::kF16) {
    return vcvt_f32_f16(
        vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(rows.base + index * 2))));
  }
  if (rows.type == kDTypeI8) {
    uint32_t four = 0;  // the row's 4 bytes (unaligned)
    std::memcpy(&four, rows.base + index, sizeof(four));
    int8x8_t b = vreinterpret_s8_u32(vdup_n_u32(four));
    return vcvtq_f32_s32(vmovl_s16(vget_low_s16(vmovl_s8(b))));
  }
  return vld1q_f32(reinterpret_cast<const float*>(rows.base + index * 4));
}

inline float RowScale(const KvRows& rows, int64_t slot) {
  return rows.type == kDTypeI8 ? rows.scales[slot] : 1.0f;
}

float Dot(const float* qh, const KvRows& k, int64_t slot, int64_t hd) {
  float32x4_t acc = vdupq_n_f32(0.0f);
  for (int64_t d = 0; d < hd; d += 4) {
    acc = vfmaq_f32(acc, vld1q_f32(qh + d), Load4(k, slot * hd + d));
  }
  return SumNeon(acc) * RowScale(k, slot);
}

// acc[j] += s · the row's 4 values at d0 + 4j, for j < blocks (≤ 16): one pass over the row.
inline void AddRow(float32x4_t* acc, int blocks, float s, const KvRows& v, int64_t first) {
  const float32x4_t weight = vdupq_n_f32(s);
  for (int j = 0; j < 16; ++j) {
    if (j < blocks) acc[j] = vfmaq_f32(acc[j], weight, Load4(v, first + 4 * j));
  }
}

// oh = inv_sum · Σ_i scores[i] · v(position i), in blocks of 64 dims whose accumulators stay in
// registers while the value rows stream by once, in order.
void AccumulateValues(const float* scores, const OpParams& p, const AttendedSpans& span,
                      int64_t position, const KvRows& v, float inv_sum, float* oh) {
  const int64_t hd = p.head_dim;
  for (int64_t d0 = 0; d0 < hd; d0 += 64) {
    const int blocks = static_cast<int>(hd - d0 >= 64 ? 16 : (hd - d0) / 4);
    float32x4_t acc[16];
    for (float32x4_t& a : acc) a = vdupq_n_f32(0.0f);
    int64_t i = 0;
    for (int64_t t = 0; t < span.sink_end; ++t, ++i) {
      AddRow(acc, blocks, scores[i] * RowScale(v, t), v, t * hd + d0);
    }
    SlotWalk walk = WalkFrom(p, span.begin);
    for (int64_t t = span.begin; t <= position; ++t, ++i) {
      const int64_t slot = walk.Next();
      AddRow(acc, blocks, scores[i] * RowScale(v, slot), v, slot * hd + d0);
    }
    const float32x4_t scale = vdupq_n_f32(inv_sum);
    for (int j = 0; j < blocks; ++j) vst1q_f32(oh + d0 + 4 * j, vmulq_f32(acc[j], scale));
  }
}

// One query row of one head: scores over the attended positions, softmax, weighted values.
void AttendOneHead(const float* qh, int64_t position, const OpParams& p, const float* rope_factors,
                   const KvRows& k, const KvRows& v, float* scores, float* oh) {
  const int64_t hd = p.head_dim;
  const AttendedSpans span = Attended(p, position);
  // q8 caches hold Hadamard-rotated rows: the query goes into that basis, the output back.
  const bool hadamard = p.kv_quant == KvQuant::kQ8;
  float rotated[256];
  float q_basis[256];
  if (span.sink_end > 0) {
    ref::RotateQuery(qh, p, span.cache_position - position, rope_factors, rotated);
    if (hadamard) Hadamard(rotated, hd);
  }
  if (hadamard) {
    for (int64_t d = 0; d < hd; ++d) q_basis[d] = qh[d];
    Hadamard(q_basis, hd);
    qh = q_basis;
  }
  int64_t n = 0;
  float max_score = -INFINITY;
  for (int64_t t = 0; t < span.sink_end; ++t) {  // sinks: slot = position
    scores[n] = Dot(rotated, k, t, hd) * p.scale;
    max_score = scores[n] > max_score ? scores[n] : max_score;
    ++n;
  }
  SlotWalk walk = WalkFrom(p, span.begin);
  for (int64_t t = span.begin; t <= position; ++t) {
    scores[n] = Dot(qh, k, walk.Next(), hd) * p.scale;
    max_score = scores[n] > max_score ? scores[n] : max_score;
    ++n;
  }
  const float inv_sum = 1.0f / ExpSumInPlaceNeon(scores, n, max_score);
  AccumulateValues(scores, p, span, position, v, inv_sum, oh);
  if (hadamard) Hadamard(oh, hd);
}

}  // namespace

void AttentionNeon(const float* q, int64_t rows, int32_t first_position,
                   const ref::KvCacheView& cache, float* scores_all, float* out, int64_t head_begin,
                   int64_t head_end) {
  AttendHeads(AttendOneHead, q, rows, first_position, cache, scores_all, out, head_begin, head_end);
}

}  // namespace staticlm::cpu::detail

#endif
