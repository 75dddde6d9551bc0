// The q4 attention primitives (fast_attention_q4.h) for AVX2 + FMA: heads of a multiple of 8
// dims, one head per pass. Lane order here: each whole 16 dims of a row as two vectors, its 8
// even dims then its 8 odd ones, and a last 8 dims, if any, as they are.
#if defined(__x86_64__)
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "backends/cpu/arch/x86/exp_avx2.h"
#include "backends/cpu/fast_attention.h"
#include "backends/cpu/fast_attention_q4.h"

namespace staticlm::cpu::detail {
namespace {

#define STATICLM_Q4_AVX2 __attribute__((target("avx2,fma,f16c")))
#define STATICLM_Q4_AVX2_INLINE __attribute__((target("avx2,fma,f16c"), always_inline)) inline

using q4::Pass;

// The 2n codes of n bytes at p as bytes in dimension order (low nibble first), n ≤ 8.
STATICLM_Q4_AVX2_INLINE __m128i Unpack(__m128i bytes) {
  const __m128i mask = _mm_set1_epi8(0x0F);
  const __m128i low = _mm_and_si128(bytes, mask);
  const __m128i high = _mm_and_si128(_mm_srli_epi16(bytes, 4), mask);
  return _mm_unpacklo_epi8(low, high);
}

// Sixteen codes (8 bytes at p) as f32: the even dims, the odd dims. Each byte widened to a lane
// holds an even code in its low nibble and the next one above it.
STATICLM_Q4_AVX2_INLINE void Codes16Avx2(const uint8_t* p, __m256* even, __m256* odd) {
  const __m256i bytes = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  *even = _mm256_cvtepi32_ps(_mm256_and_si256(bytes, _mm256_set1_epi32(0x0F)));
  *odd = _mm256_cvtepi32_ps(_mm256_srli_epi32(bytes, 4));
}

// Dims [0, 16) in a, b → the even dims in a, the odd dims in b.
STATICLM_Q4_AVX2_INLINE void SplitAvx2(__m256* a, __m256* b) {
  const __m256 even = _mm256_shuffle_ps(*a, *b, 0x88);  // a0 a2 b0 b2 | a4 a6 b4 b6
  const __m256 odd = _mm256_shuffle_ps(*a, *b, 0xDD);
  *a = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(even), 0xD8));
  *b = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(odd), 0xD8));
}

// SplitAvx2's inverse.
STATICLM_Q4_AVX2_INLINE void MergeAvx2(__m256* a, __m256* b) {
  const __m256 low = _mm256_unpacklo_ps(*a, *b);  // e0 o0 e1 o1 | e4 o4 e5 o5
  const __m256 high = _mm256_unpackhi_ps(*a, *b);
  *a = _mm256_permute2f128_ps(low, high, 0x20);
  *b = _mm256_permute2f128_ps(low, high, 0x31);
}

// Row i's dims [d, d + 16) as two vectors: codes in lane order, or f32 as they are.
template <bool kCodes>
STATICLM_Q4_AVX2_INLINE void Load16Avx2(const uint8_t* base, int64_t hd, int64_t i, int64_t d,
                                        __m256* x, __m256* y) {
  if constexpr (kCodes) {
    Codes16Avx2(base + (i * hd + d) / 2, x, y);
  } else {
    const float* row = reinterpret_cast<const float*>(base) + i * hd + d;
    *x = _mm256_loadu_ps(row);
    *y = _mm256_loadu_ps(row + 8);
  }
}

// Row i's dims [d, d + 8), codes (4 bytes) or f32, in dimension order.
template <bool kCodes>
STATICLM_Q4_AVX2_INLINE __m256 Load8(const uint8_t* base, int64_t hd, int64_t i, int64_t d) {
  if constexpr (kCodes) {
    int32_t four = 0;  // unaligned
    std::memcpy(&four, base + (i * hd + d) / 2, sizeof(four));
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(Unpack(_mm_cvtsi32_si128(four))));
  } else {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(base) + i * hd + d);
  }
}

template <bool kCodes>
STATICLM_Q4_AVX2 void ScoreAvx2(const Pass& h, const uint8_t* keys, const float* params,
                                int64_t count, int64_t at, float* vmax) {
  const int64_t hd = h.head_dim, pairs = hd / 16;
  const bool single = hd % 16 != 0;  // a last 8 dims
  float bias = 0.0f;
  alignas(32) float folded[256];  // codes: the query times the scales, in lane order
  const float* q = h.q[0];
  if constexpr (kCodes) {
    // q · k = Σ (q ∘ scales) · codes + q · mins
    __m256 q_min = _mm256_setzero_ps();
    for (int64_t d = 0; d < hd; d += 8) {
      const __m256 x = _mm256_loadu_ps(h.q[0] + d);
      _mm256_store_ps(folded + d, _mm256_mul_ps(x, _mm256_loadu_ps(params + d)));
      q_min = _mm256_fmadd_ps(x, _mm256_loadu_ps(params + hd + d), q_min);
    }
    for (int64_t p = 0; p < pairs; ++p) {
      __m256 a = _mm256_load_ps(folded + 16 * p), b = _mm256_load_ps(folded + 16 * p + 8);
      SplitAvx2(&a, &b);
      _mm256_store_ps(folded + 16 * p, a);
      _mm256_store_ps(folded + 16 * p + 8, b);
    }
    bias = SumLanesAvx2(q_min);
    q = folded;
  }
  float m = vmax[0];
  for (int64_t i = 0; i < count; ++i) {
    __m256 acc = _mm256_setzero_ps();
    for (int64_t p = 0; p < pairs; ++p) {
      __m256 x, y;
      Load16Avx2<kCodes>(keys, hd, i, 16 * p, &x, &y);
      acc = _mm256_fmadd_ps(_mm256_loadu_ps(q + 16 * p), x, acc);
      acc = _mm256_fmadd_ps(_mm256_loadu_ps(q + 16 * p + 8), y, acc);
    }
    if (single)
      acc = _mm256_fmadd_ps(_mm256_loadu_ps(q + hd - 8), Load8<kCodes>(keys, hd, i, hd - 8), acc);
    const float x = (SumLanesAvx2(acc) + bias) * h.scale;
    h.scores[0][at + i] = x;
    m = m > x ? m : x;
  }
  vmax[0] = m;
}

// out[0] += Σ_i w(i) · values_i, 32 dims (four registers) at a time: whole 16 dims in pairs of
// vectors (codes: in lane order), then a last 8 (blocks odd: the row's last 8, since d0 is a
// multiple of 32).
template <bool kCodes>
STATICLM_Q4_AVX2 void AddAvx2(const Pass& h, const uint8_t* values, const float* params,
                              int64_t count, int64_t at) {
  const int64_t hd = h.head_dim;
  for (int64_t d0 = 0; d0 < hd; d0 += 32) {
    const int blocks = static_cast<int>(hd - d0 >= 32 ? 4 : (hd - d0) / 8);
    const int pairs = blocks / 2;
    __m256 acc[4];
    for (int j = 0; j < 4; ++j) {
      acc[j] = j < blocks ? _mm256_loadu_ps(h.out[0] + d0 + 8 * j) : _mm256_setzero_ps();
    }
    if constexpr (kCodes) {
      for (int p = 0; p < pairs; ++p) SplitAvx2(&acc[2 * p], &acc[2 * p + 1]);
    }
    for (int64_t i = 0; i < count; ++i) {
      const __m256 w = _mm256_set1_ps(h.scores[0][at + i] * (kCodes ? params[2 * i] : 1.0f));
      for (int p = 0; p < 2; ++p) {
        if (p < pairs) {
          __m256 x, y;
          Load16Avx2<kCodes>(values, hd, i, d0 + 16 * p, &x, &y);
          acc[2 * p] = _mm256_fmadd_ps(w, x, acc[2 * p]);
          acc[2 * p + 1] = _mm256_fmadd_ps(w, y, acc[2 * p + 1]);
        }
      }
      if (blocks % 2 == 1) {
        acc[blocks - 1] =
            _mm256_fmadd_ps(w, Load8<kCodes>(values, hd, i, d0 + 16 * pairs), acc[blocks - 1]);
      }
    }
    if constexpr (kCodes) {
      for (int p = 0; p < pairs; ++p) MergeAvx2(&acc[2 * p], &acc[2 * p + 1]);
    }
    for (int j = 0; j < blocks; ++j) _mm256_storeu_ps(h.out[0] + d0 + 8 * j, acc[j]);
  }
}

void ScoreCodesAvx2(const Pass& h, const uint8_t* codes, const float* params, int64_t count,
                    int64_t at, float* vmax) {
  ScoreAvx2<true>(h, codes, params, count, at, vmax);
}

void ScoreRowsAvx2(const Pass& h, const float* rows, int64_t count, int64_t at, float* vmax) {
  ScoreAvx2<false>(h, reinterpret_cast<const uint8_t*>(rows), nullptr, count, at, vmax);
}

void AddCodesAvx2(const Pass& h, const uint8_t* codes, const float* params, int64_t count,
                  int64_t at, float* bias) {
  AddAvx2<true>(h, codes, params, count, at);
  q4::AddMins(h, params, count, at, bias);
}

void AddRowsAvx2(const Pass& h, const float* rows, int64_t count, int64_t at) {
  AddAvx2<false>(h, reinterpret_cast<const uint8_t*>(rows), nullptr, count, at);
}

STATICLM_Q4_AVX2 float ExpSum(float* x, int64_t n, float max) {
  return ExpSumInPlaceAvx2(x, n, max);
}

constexpr q4::Kernels kAvx2{1, ScoreCodesAvx2, ScoreRowsAvx2, AddCodesAvx2, AddRowsAvx2, ExpSum};

}  // namespace

void AttentionQ4Avx2(const float* q, int64_t rows, int32_t first_position,
                     const ref::KvCacheView& cache, float* scores, float* out, int64_t head_begin,
                     int64_t head_end) {
  q4::Attend(kAvx2, q, rows, first_position, cache, scores, out, head_begin, head_end);
}

}  // namespace staticlm::cpu::detail

#endif
