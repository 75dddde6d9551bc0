// e^x on eight f32 lanes, shared by the AVX2 and AVX-512 kernels (fast_elementwise.cpp,
// fast_attention.cpp, fast_attention_avx512.cpp) so that softmax and attention compute
// exponentials the same way. x86-64 only; callers are
// functions compiled for AVX2 + FMA.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

#include <cstdint>

namespace staticlm::cpu {

#define STATICLM_AVX2_FMA_INLINE __attribute__((target("avx2,fma"), always_inline)) inline

// e^x for x in [−87.3, 88.3] (clamped outside), within 2 ulp of expf: x = n·ln2 + r with
// |r| ≤ ln2/2, e^r by its Taylor series to r⁶ (truncation < 1.3e-7 relative), then scaled by 2ⁿ
// through the exponent bits. ln2 is split in two so that r is exact to f32.
STATICLM_AVX2_FMA_INLINE __m256 ExpAvx2(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.3f));
  __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145752f), x);  // ln2, high bits
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.42860677e-6f), r);       // ln2, the rest
  __m256 p = _mm256_set1_ps(1.0f / 720.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  __m256i scale =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(scale));
}

// The lanes [0, count) of a partial vector (count < 8), as a mask for maskload / maskstore.
STATICLM_AVX2_FMA_INLINE __m256i TailMaskAvx2(int64_t count) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)), lanes);
}

// The sum of eight lanes: halves, then pairs (the order every AVX2 kernel here reduces in).
STATICLM_AVX2_FMA_INLINE float SumLanesAvx2(__m256 v) {
  __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
}

// x[i] = e^(x[i] − max_value) for i < n; returns their sum (eight lanes, then SumLanesAvx2).
// Softmax and attention share it, so both exponentiate and sum in the same order.
STATICLM_AVX2_FMA_INLINE float ExpSumInPlaceAvx2(float* x, int64_t n, float max_value) {
  const __m256 m = _mm256_set1_ps(max_value);
  __m256 sum = _mm256_setzero_ps();
  const int64_t full = n / 8 * 8;
  for (int64_t i = 0; i < full; i += 8) {
    __m256 e = ExpAvx2(_mm256_sub_ps(_mm256_loadu_ps(x + i), m));
    _mm256_storeu_ps(x + i, e);
    sum = _mm256_add_ps(sum, e);
  }
  if (full < n) {
    const __m256i tail = TailMaskAvx2(n - full);
    __m256 e = ExpAvx2(_mm256_sub_ps(_mm256_maskload_ps(x + full, tail), m));
    e = _mm256_and_ps(e, _mm256_castsi256_ps(tail));
    _mm256_maskstore_ps(x + full, tail, e);
    sum = _mm256_add_ps(sum, e);
  }
  return SumLanesAvx2(sum);
}

}  // namespace staticlm::cpu

#endif
