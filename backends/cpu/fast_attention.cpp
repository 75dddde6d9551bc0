#include "backends/cpu/fast_attention.h"

#include <cmath>

#include "backends/cpu/reference_kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define STATICLM_HAVE_X86_ATTENTION 1
#endif

namespace staticlm::cpu {
namespace {

#if defined(STATICLM_HAVE_X86_ATTENTION)
#define STATICLM_AVX2 __attribute__((target("avx2,fma,f16c")))

// Eight cache values as f32, from f16 or f32 storage.
STATICLM_AVX2 inline __m256 Load8(DType type, const uint8_t* base, int64_t index) {
  if (type == DType::kF16) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(base + index * 2)));
  }
  return _mm256_loadu_ps(reinterpret_cast<const float*>(base + index * 4));
}

STATICLM_AVX2 inline float HorizontalSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// One query row of one head: scores over slots 0 … last, softmax, weighted sum of values.
STATICLM_AVX2 void AttendOneHead(const float* qh, int64_t head_dim, int64_t last, float scale,
                                 DType type, const uint8_t* k, const uint8_t* v, float* scores,
                                 float* oh) {
  float max_score = -INFINITY;
  for (int64_t t = 0; t <= last; ++t) {
    __m256 acc = _mm256_setzero_ps();
    for (int64_t d = 0; d < head_dim; d += 8) {
      acc = _mm256_fmadd_ps(_mm256_loadu_ps(qh + d), Load8(type, k, t * head_dim + d), acc);
    }
    scores[t] = HorizontalSum(acc) * scale;
    max_score = scores[t] > max_score ? scores[t] : max_score;
  }
  float sum = 0.0f;
  for (int64_t t = 0; t <= last; ++t) {
    scores[t] = std::exp(scores[t] - max_score);
    sum += scores[t];
  }
  const float inv_sum = 1.0f / sum;
  for (int64_t d = 0; d < head_dim; d += 8) {
    __m256 acc = _mm256_setzero_ps();
    for (int64_t t = 0; t <= last; ++t) {
      acc = _mm256_fmadd_ps(_mm256_set1_ps(scores[t]), Load8(type, v, t * head_dim + d), acc);
    }
    _mm256_storeu_ps(oh + d, _mm256_mul_ps(acc, _mm256_set1_ps(inv_sum)));
  }
}

STATICLM_AVX2 void AttentionAvx2(const float* q, int64_t rows, int64_t n_heads, int64_t kv_heads,
                                 int64_t head_dim, int64_t capacity, int32_t first_position,
                                 float scale, DType cache_type, const uint8_t* k_cache,
                                 const uint8_t* v_cache, float* scores_all, float* out,
                                 int64_t head_begin, int64_t head_end) {
  const int64_t group = n_heads / kv_heads;
  const int64_t elem = cache_type == DType::kF16 ? 2 : 4;
  for (int64_t h = head_begin; h < head_end; ++h) {
    const int64_t g = h / group;
    const uint8_t* k = k_cache + g * capacity * head_dim * elem;
    const uint8_t* v = v_cache + g * capacity * head_dim * elem;
    for (int64_t r = 0; r < rows; ++r) {
      AttendOneHead(q + (r * n_heads + h) * head_dim, head_dim, first_position + r, scale,
                    cache_type, k, v, scores_all + h * capacity,
                    out + (r * n_heads + h) * head_dim);
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
