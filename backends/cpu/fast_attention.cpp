#include "backends/cpu/fast_attention.h"

#include <cmath>
#include <cstdint>

#include "backends/cpu/arch/x86/exp_avx2.h"
#include "backends/cpu/attention_simd.h"
#include "backends/cpu/hadamard.h"
#include "contract/kv_policy.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define STATICLM_HAVE_X86_ATTENTION 1
#endif

namespace staticlm::cpu {
namespace {

#if defined(STATICLM_HAVE_X86_ATTENTION)
#define STATICLM_AVX2 __attribute__((target("avx2,fma,f16c")))

// Eight values of a row as f32 (q8 values not yet scaled: the caller multiplies a row's sum).
STATICLM_AVX2 inline __m256 Load8(const KvRows& rows, int64_t index) {
  if (rows.type == DType::kF16) {
    return _mm256_cvtph_ps(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows.base + index * 2)));
  }
  if (rows.type == kDTypeI8) {
    return _mm256_cvtepi32_ps(
        _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(rows.base + index))));
  }
  return _mm256_loadu_ps(reinterpret_cast<const float*>(rows.base + index * 4));
}

STATICLM_AVX2 inline float RowScale(const KvRows& rows, int64_t slot) {
  return rows.type == kDTypeI8 ? rows.scales[slot] : 1.0f;
}

STATICLM_AVX2 inline float HorizontalMax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

STATICLM_AVX2 float Dot(const float* qh, const KvRows& k, int64_t slot, int64_t hd) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t d = 0; d < hd; d += 8) {
    acc = _mm256_fmadd_ps(_mm256_loadu_ps(qh + d), Load8(k, slot * hd + d), acc);
  }
  return SumLanesAvx2(acc) * RowScale(k, slot);
}

// The dots of q with the keys at slots[0 … 7], lane j for slots[j]: eight rows at a time, so
// the lanes are summed once per eight keys instead of once per key.
STATICLM_AVX2 __m256 Dot8(const float* qh, const KvRows& k, const int64_t* slots, int64_t hd) {
  __m256 acc[8];
  for (__m256& a : acc) a = _mm256_setzero_ps();
  for (int64_t d = 0; d < hd; d += 8) {
    const __m256 q = _mm256_loadu_ps(qh + d);
    for (int j = 0; j < 8; ++j) acc[j] = _mm256_fmadd_ps(q, Load8(k, slots[j] * hd + d), acc[j]);
  }
  // A transposing reduction: after it, lane j holds the sum of acc[j]'s lanes.
  const __m256 t0 = _mm256_hadd_ps(acc[0], acc[1]), t1 = _mm256_hadd_ps(acc[2], acc[3]);
  const __m256 t2 = _mm256_hadd_ps(acc[4], acc[5]), t3 = _mm256_hadd_ps(acc[6], acc[7]);
  const __m256 u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);
  __m256 sums =
      _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
  if (k.type == kDTypeI8) {
    sums = _mm256_mul_ps(sums,
                         _mm256_setr_ps(k.scales[slots[0]], k.scales[slots[1]], k.scales[slots[2]],
                                        k.scales[slots[3]], k.scales[slots[4]], k.scales[slots[5]],
                                        k.scales[slots[6]], k.scales[slots[7]]));
  }
  return sums;
}

// scores[i] = scale · (q · key i) for the `count` keys `walk` gives, eight at a time;
// *max_score becomes the largest of them and its old value.
STATICLM_AVX2 void Score(const float* qh, const KvRows& k, int64_t hd, SlotWalk* walk,
                         int64_t count, float scale, float* scores, float* max_score) {
  const __m256 s = _mm256_set1_ps(scale);
  __m256 vmax = _mm256_set1_ps(*max_score);
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    int64_t slots[8];
    for (int64_t& slot : slots) slot = walk->Next();
    const __m256 x = _mm256_mul_ps(Dot8(qh, k, slots, hd), s);
    _mm256_storeu_ps(scores + i, x);
    vmax = _mm256_max_ps(vmax, x);
  }
  float m = HorizontalMax(vmax);
  for (; i < count; ++i) {
    scores[i] = Dot(qh, k, walk->Next(), hd) * scale;
    m = scores[i] > m ? scores[i] : m;
  }
  *max_score = m;
}

// acc[j] += s · the row's 8 values at d0 + 8j, for j < blocks (≤ 8): one pass over the row.
STATICLM_AVX2 inline void AddRow(__m256* acc, int blocks, float s, const KvRows& v, int64_t first) {
  const __m256 weight = _mm256_set1_ps(s);
  for (int j = 0; j < 8; ++j) {
    if (j < blocks) acc[j] = _mm256_fmadd_ps(weight, Load8(v, first + 8 * j), acc[j]);
  }
}

// oh = inv_sum · Σ_i scores[i] · v(position i), in blocks of 64 dims whose accumulators stay in
// registers while the value rows stream by once, in order (each lane sums over the positions
// in order, as a per-lane loop would).
STATICLM_AVX2 void AccumulateValues(const float* scores, const OpParams& p,
                                    const AttendedSpans& span, int64_t position, const KvRows& v,
                                    float inv_sum, float* oh) {
  const int64_t hd = p.head_dim;
  for (int64_t d0 = 0; d0 < hd; d0 += 64) {
    const int blocks = static_cast<int>(hd - d0 >= 64 ? 8 : (hd - d0) / 8);
    __m256 acc[8];
    for (__m256& a : acc) a = _mm256_setzero_ps();
    int64_t i = 0;
    for (int64_t t = 0; t < span.sink_end; ++t, ++i) {
      AddRow(acc, blocks, scores[i] * RowScale(v, t), v, t * hd + d0);
    }
    SlotWalk walk = WalkFrom(p, span.begin);
    for (int64_t t = span.begin; t <= position; ++t, ++i) {
      const int64_t slot = walk.Next();
      AddRow(acc, blocks, scores[i] * RowScale(v, slot), v, slot * hd + d0);
    }
    const __m256 scale = _mm256_set1_ps(inv_sum);
    for (int j = 0; j < blocks; ++j) {
      _mm256_storeu_ps(oh + d0 + 8 * j, _mm256_mul_ps(acc[j], scale));
    }
  }
}

// One query row of one head: scores over the attended positions, softmax, weighted values.
STATICLM_AVX2 void AttendOneHead(const float* qh, int64_t position, const OpParams& p,
                                 const float* rope_factors, const KvRows& k, const KvRows& v,
                                 float* scores, float* oh) {
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
  float max_score = -INFINITY;
  SlotWalk sinks{0, INT64_MAX, 0};  // sinks: slot = position
  Score(rotated, k, hd, &sinks, span.sink_end, p.scale, scores, &max_score);
  SlotWalk walk = WalkFrom(p, span.begin);
  // Before the sinks are full, `begin` (the first non-sink) lies past the query.
  const int64_t recent = position >= span.begin ? position - span.begin + 1 : 0;
  Score(qh, k, hd, &walk, recent, p.scale, scores + span.sink_end, &max_score);
  const int64_t n = span.sink_end + recent;
  const float inv_sum = 1.0f / ExpSumInPlaceAvx2(scores, n, max_score);
  AccumulateValues(scores, p, span, position, v, inv_sum, oh);
  if (hadamard) Hadamard(oh, hd);
}

void AttentionAvx2(const float* q, int64_t rows, int32_t first_position,
                   const ref::KvCacheView& cache, float* scores_all, float* out, int64_t head_begin,
                   int64_t head_end) {
  if (cache.params.kv_quant == KvQuant::kQ4) {
    detail::AttentionQ4Avx2(q, rows, first_position, cache, scores_all, out, head_begin, head_end);
    return;
  }
  AttendHeads(AttendOneHead, q, rows, first_position, cache, scores_all, out, head_begin, head_end);
}

// The AVX-512 kernels for every cache type: q4 caches take their own.
void AttentionAvx512AnyCache(const float* q, int64_t rows, int32_t first_position,
                             const ref::KvCacheView& cache, float* scores, float* out,
                             int64_t head_begin, int64_t head_end) {
  const AttentionFn fn =
      cache.params.kv_quant == KvQuant::kQ4 ? detail::AttentionQ4Avx512 : detail::AttentionAvx512;
  fn(q, rows, first_position, cache, scores, out, head_begin, head_end);
}
#endif

#if defined(__aarch64__)
// The NEON kernels for every cache type: q4 caches take their own.
void AttentionNeonAnyCache(const float* q, int64_t rows, int32_t first_position,
                           const ref::KvCacheView& cache, float* scores, float* out,
                           int64_t head_begin, int64_t head_end) {
  const AttentionFn fn =
      cache.params.kv_quant == KvQuant::kQ4 ? detail::AttentionQ4Neon : detail::AttentionNeon;
  fn(q, rows, first_position, cache, scores, out, head_begin, head_end);
}
#endif

}  // namespace

AttentionFn SelectAttention(const CpuFeatures& features, int64_t head_dim, const char** name,
                            bool* serves_groups) {
  if (serves_groups != nullptr) *serves_groups = false;
#if defined(STATICLM_HAVE_X86_ATTENTION)
  if (features.avx512f && features.avx512vl && features.fma && features.f16c &&
      detail::Avx512AttentionTakes(head_dim)) {
    *name = "avx512";
    if (serves_groups != nullptr) *serves_groups = true;
    return AttentionAvx512AnyCache;
  }
  if (features.avx2 && features.fma && features.f16c && head_dim % 8 == 0) {
    *name = "avx2";
    return AttentionAvx2;
  }
#endif
#if defined(__aarch64__)
  if (features.neon && head_dim % 4 == 0) {
    *name = "neon";
    return AttentionNeonAnyCache;
  }
#endif
  (void)features;
  (void)head_dim;
  *name = "reference";
  return ref::Attention;
}

}  // namespace staticlm::cpu
