#include "backends/cpu/fast_attention.h"

#include <cmath>

#include "backends/cpu/hadamard.h"
#include "backends/kv_policy.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define STATICLM_HAVE_X86_ATTENTION 1
#endif

namespace staticlm::cpu {
namespace {

#if defined(STATICLM_HAVE_X86_ATTENTION)
#define STATICLM_AVX2 __attribute__((target("avx2,fma,f16c")))

// One KV head's keys or values: rows of head_dim at `base`, with q8 scales beside.
struct Rows {
  DType type;
  const uint8_t* base;
  const float* scales;  // q8 only
};

// Eight values of a row as f32 (q8 values not yet scaled: the caller multiplies a row's sum).
STATICLM_AVX2 inline __m256 Load8(const Rows& rows, int64_t index) {
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

STATICLM_AVX2 inline float RowScale(const Rows& rows, int64_t slot) {
  return rows.type == kDTypeI8 ? rows.scales[slot] : 1.0f;
}

STATICLM_AVX2 inline float HorizontalSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// The slots of positions first … first + n − 1, in order: consecutive, wrapping from
// `wrap_at` to `wrap_to` (the policy's ring), so no division per key.
struct SlotWalk {
  int64_t slot, wrap_at, wrap_to;
  int64_t Next() {
    int64_t s = slot++;
    if (slot == wrap_at) slot = wrap_to;
    return s;
  }
};

SlotWalk WalkFrom(const OpParams& p, int64_t position) {
  return {KvSlot(p, position), p.cache_slots,
          p.cache_policy == CachePolicy::kSink ? int64_t{p.sinks} : 0};
}

STATICLM_AVX2 float Dot(const float* qh, const Rows& k, int64_t slot, int64_t hd) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t d = 0; d < hd; d += 8) {
    acc = _mm256_fmadd_ps(_mm256_loadu_ps(qh + d), Load8(k, slot * hd + d), acc);
  }
  return HorizontalSum(acc) * RowScale(k, slot);
}

// One query row of one head: scores over the attended positions, softmax, weighted values.
STATICLM_AVX2 void AttendOneHead(const float* qh, int64_t position, const OpParams& p,
                                 const Rows& k, const Rows& v, float* scores, float* oh) {
  const int64_t hd = p.head_dim;
  const AttendedSpans span = Attended(p, position);
  // q8 caches hold Hadamard-rotated rows: the query goes into that basis, the output back.
  const bool hadamard = p.kv_quant == KvQuant::kQ8;
  float rotated[256];
  float q_basis[256];
  if (span.sink_end > 0) {
    ref::RotateQuery(qh, hd, span.cache_position - position, p.rope_base, rotated);
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
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    scores[i] = std::exp(scores[i] - max_score);
    sum += scores[i];
  }
  const float inv_sum = 1.0f / sum;
  for (int64_t d = 0; d < hd; d += 8) {
    __m256 acc = _mm256_setzero_ps();
    int64_t i = 0;
    for (int64_t t = 0; t < span.sink_end; ++t, ++i) {
      acc = _mm256_fmadd_ps(_mm256_set1_ps(scores[i] * RowScale(v, t)), Load8(v, t * hd + d), acc);
    }
    walk = WalkFrom(p, span.begin);
    for (int64_t t = span.begin; t <= position; ++t, ++i) {
      const int64_t slot = walk.Next();
      acc = _mm256_fmadd_ps(_mm256_set1_ps(scores[i] * RowScale(v, slot)), Load8(v, slot * hd + d),
                            acc);
    }
    _mm256_storeu_ps(oh + d, _mm256_mul_ps(acc, _mm256_set1_ps(inv_sum)));
  }
  if (hadamard) Hadamard(oh, hd);
}

STATICLM_AVX2 void AttentionAvx2(const float* q, int64_t rows, int32_t first_position,
                                 const ref::KvCacheView& cache, float* scores_all, float* out,
                                 int64_t head_begin, int64_t head_end) {
  const OpParams& p = cache.params;
  if (p.kv_quant == KvQuant::kQ4) {
    ref::Attention(q, rows, first_position, cache, scores_all, out, head_begin, head_end);
    return;
  }
  const int64_t group = p.n_heads / p.n_kv_heads;
  const int64_t hd = p.head_dim;
  const int64_t elem = cache.type == DType::kF32 ? 4 : (cache.type == DType::kF16 ? 2 : 1);
  for (int64_t h = head_begin; h < head_end; ++h) {
    const int64_t g = h / group;
    const int64_t first_row = g * p.cache_slots;
    Rows k{cache.type, cache.k + first_row * hd * elem,
           cache.k_side != nullptr ? cache.k_side + first_row : nullptr};
    Rows v{cache.type, cache.v + first_row * hd * elem,
           cache.v_side != nullptr ? cache.v_side + first_row : nullptr};
    for (int64_t r = 0; r < rows; ++r) {
      AttendOneHead(q + (r * p.n_heads + h) * hd, first_position + r, p, k, v,
                    scores_all + h * p.cache_slots, out + (r * p.n_heads + h) * hd);
    }
  }
}
#endif

}  // namespace

AttentionFn SelectAttention(const CpuFeatures& features, int64_t head_dim, const char** name) {
#if defined(STATICLM_HAVE_X86_ATTENTION)
  if (features.avx2 && features.fma && features.f16c && head_dim % 8 == 0) {
    *name = "avx2";
    return AttentionAvx2;
  }
#endif
  (void)features;
  (void)head_dim;
  *name = "reference";
  return ref::Attention;
}

}  // namespace staticlm::cpu
