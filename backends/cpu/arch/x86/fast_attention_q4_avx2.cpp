// The q4 attention primitives (fast_attention_q4.h) for AVX2 + FMA: heads of a multiple of 8
// dims, up to four query heads of a KV head per pass, so that each code row is unpacked once for
// all (one head per pass unpacked every row once per query head: on SmolLM2's shape at depth
// 2048 this kernel took 2.8 times the q8 kernel's time). Lane order here: each whole 16 dims of a
// row as two vectors, its 8 even dims then its 8 odd ones, and a last 8 dims, if any, as they are.
#if defined(__x86_64__)
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "backends/cpu/arch/x86/exp_avx2.h"
#include "backends/cpu/arch/x86/lane_sums_avx2.h"
#include "backends/cpu/attention_simd.h"
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

// Keys [i, i + K) for every head of the pass (queries q, folded for codes, with their biases):
// their dot products summed lane by lane, then reduced; vmax[g] keeps the largest score.
template <bool kCodes, int G, int K>
STATICLM_Q4_AVX2_INLINE void ScoreKeys(const Pass& h, const uint8_t* keys, const float* const* q,
                                       const float* bias, int64_t i, int64_t at, float* vmax) {
  const int64_t hd = h.head_dim, pairs = hd / 16;
  const bool single = hd % 16 != 0;  // a last 8 dims
  __m256 acc[G][K];
  for (int g = 0; g < G; ++g) {
    for (int j = 0; j < K; ++j) acc[g][j] = _mm256_setzero_ps();
  }
  for (int j = 0; j < K; ++j) {
    for (int64_t p = 0; p < pairs; ++p) {
      __m256 x, y;
      Load16Avx2<kCodes>(keys, hd, i + j, 16 * p, &x, &y);
      for (int g = 0; g < G; ++g) {
        acc[g][j] = _mm256_fmadd_ps(_mm256_loadu_ps(q[g] + 16 * p), x, acc[g][j]);
        acc[g][j] = _mm256_fmadd_ps(_mm256_loadu_ps(q[g] + 16 * p + 8), y, acc[g][j]);
      }
    }
    if (single) {
      const __m256 last = Load8<kCodes>(keys, hd, i + j, hd - 8);
      for (int g = 0; g < G; ++g)
        acc[g][j] = _mm256_fmadd_ps(_mm256_loadu_ps(q[g] + hd - 8), last, acc[g][j]);
    }
  }
  for (int g = 0; g < G; ++g) {
    alignas(16) float sums[4];
    LaneSums<K>(acc[g], sums);
    for (int j = 0; j < K; ++j) {
      const float x = (sums[j] + bias[g]) * h.scale;
      h.scores[g][at + i + j] = x;
      vmax[g] = vmax[g] > x ? vmax[g] : x;
    }
  }
}

// The scores of `count` keys (codes of one group with its params, or f32 rows) for G heads, J
// keys per reduction (LaneSums: a key's bits do not depend on G or J): each key row is unpacked
// once for all the heads.
template <bool kCodes, int G>
STATICLM_Q4_AVX2 void ScoreAvx2(const Pass& h, const uint8_t* keys, const float* params,
                                int64_t count, int64_t at, float* vmax) {
  constexpr int J = G <= 2 ? 4 : 2;  // G·J accumulators and a key's two vectors in registers
  const int64_t hd = h.head_dim, pairs = hd / 16;
  float bias[G];
  alignas(32) float folded[G][256];  // codes: the queries times the scales, in lane order
  const float* q[G];
  for (int g = 0; g < G; ++g) {
    q[g] = h.q[g];
    bias[g] = 0.0f;
    if constexpr (kCodes) {
      // q · k = Σ (q ∘ scales) · codes + q · mins
      __m256 q_min = _mm256_setzero_ps();
      for (int64_t d = 0; d < hd; d += 8) {
        const __m256 x = _mm256_loadu_ps(h.q[g] + d);
        _mm256_store_ps(folded[g] + d, _mm256_mul_ps(x, _mm256_loadu_ps(params + d)));
        q_min = _mm256_fmadd_ps(x, _mm256_loadu_ps(params + hd + d), q_min);
      }
      for (int64_t p = 0; p < pairs; ++p) {
        __m256 a = _mm256_load_ps(folded[g] + 16 * p), b = _mm256_load_ps(folded[g] + 16 * p + 8);
        SplitAvx2(&a, &b);
        _mm256_store_ps(folded[g] + 16 * p, a);
        _mm256_store_ps(folded[g] + 16 * p + 8, b);
      }
      bias[g] = SumLanesAvx2(q_min);
      q[g] = folded[g];
    }
  }

  int64_t i = 0;
  for (; i + J <= count; i += J) ScoreKeys<kCodes, G, J>(h, keys, q, bias, i, at, vmax);
  for (; i < count; ++i) ScoreKeys<kCodes, G, 1>(h, keys, q, bias, i, at, vmax);
}

// out[g][d0, d0 + 16·P + 8·L) += Σ_i w_g(i) · values_i (P pairs of 16 dims, codes in lane
// order, then L = 0 or 1 last 8 dims), w_g(i) the score times the row's scale for codes: each
// value row is unpacked once for all the heads; the sums stay in registers.
template <bool kCodes, int G, int P, int L>
STATICLM_Q4_AVX2 void AddBlockAvx2(const Pass& h, const uint8_t* values, const float* params,
                                   int64_t count, int64_t at, int64_t d0) {
  const int64_t hd = h.head_dim;
  constexpr int B = 2 * P + L;
  __m256 acc[G][B];
  for (int g = 0; g < G; ++g) {
    for (int j = 0; j < B; ++j) acc[g][j] = _mm256_loadu_ps(h.out[g] + d0 + 8 * j);
    if constexpr (kCodes) {
      for (int p = 0; p < P; ++p) SplitAvx2(&acc[g][2 * p], &acc[g][2 * p + 1]);
    }
  }
  for (int64_t i = 0; i < count; ++i) {
    __m256 value[B];
    for (int p = 0; p < P; ++p) {
      Load16Avx2<kCodes>(values, hd, i, d0 + 16 * p, &value[2 * p], &value[2 * p + 1]);
    }
    if constexpr (L == 1) value[B - 1] = Load8<kCodes>(values, hd, i, d0 + 16 * P);
    const float row_scale = kCodes ? params[2 * i] : 1.0f;
    for (int g = 0; g < G; ++g) {
      const __m256 w = _mm256_set1_ps(h.scores[g][at + i] * row_scale);
      for (int j = 0; j < B; ++j) acc[g][j] = _mm256_fmadd_ps(w, value[j], acc[g][j]);
    }
  }
  for (int g = 0; g < G; ++g) {
    if constexpr (kCodes) {
      for (int p = 0; p < P; ++p) MergeAvx2(&acc[g][2 * p], &acc[g][2 * p + 1]);
    }
    for (int j = 0; j < B; ++j) _mm256_storeu_ps(h.out[g] + d0 + 8 * j, acc[g][j]);
  }
}

// out[g] += Σ_i w_g(i) · values_i: 32 dims a block for one or two heads, 16 for more (the
// accumulators of every head in registers), then a last 8 dims if any.
template <bool kCodes, int G>
STATICLM_Q4_AVX2 void AddAvx2(const Pass& h, const uint8_t* values, const float* params,
                              int64_t count, int64_t at) {
  constexpr int P = G <= 2 ? 2 : 1;
  const int64_t hd = h.head_dim, whole = hd / 16 * 16;
  int64_t d0 = 0;
  for (; d0 + 16 * P <= whole; d0 += 16 * P)
    AddBlockAvx2<kCodes, G, P, 0>(h, values, params, count, at, d0);
  for (; d0 < whole; d0 += 16) AddBlockAvx2<kCodes, G, 1, 0>(h, values, params, count, at, d0);
  if (whole < hd) AddBlockAvx2<kCodes, G, 0, 1>(h, values, params, count, at, whole);
}

void ScoreCodesAvx2(const Pass& h, const uint8_t* codes, const float* params, int64_t count,
                    int64_t at, float* vmax) {
  WithGroupSize(h.n, [&](auto g) { ScoreAvx2<true, g.value>(h, codes, params, count, at, vmax); });
}

void ScoreRowsAvx2(const Pass& h, const float* rows, int64_t count, int64_t at, float* vmax) {
  const auto* keys = reinterpret_cast<const uint8_t*>(rows);
  WithGroupSize(h.n, [&](auto g) { ScoreAvx2<false, g.value>(h, keys, nullptr, count, at, vmax); });
}

void AddCodesAvx2(const Pass& h, const uint8_t* codes, const float* params, int64_t count,
                  int64_t at, float* bias) {
  WithGroupSize(h.n, [&](auto g) { AddAvx2<true, g.value>(h, codes, params, count, at); });
  q4::AddMins(h, params, count, at, bias);
}

void AddRowsAvx2(const Pass& h, const float* rows, int64_t count, int64_t at) {
  const auto* values = reinterpret_cast<const uint8_t*>(rows);
  WithGroupSize(h.n, [&](auto g) { AddAvx2<false, g.value>(h, values, nullptr, count, at); });
}

STATICLM_Q4_AVX2 float ExpSum(float* x, int64_t n, float max) {
  return ExpSumInPlaceAvx2(x, n, max);
}

constexpr q4::Kernels kAvx2{q4::kMaxHeads, ScoreCodesAvx2, ScoreRowsAvx2,
                            AddCodesAvx2,  AddRowsAvx2,    ExpSum};

}  // namespace

void AttentionQ4Avx2(const float* q, int64_t rows, int32_t first_position,
                     const ref::KvCacheView& cache, float* scores, float* out, int64_t head_begin,
                     int64_t head_end) {
  q4::Attend(kAvx2, q, rows, first_position, cache, scores, out, head_begin, head_end);
}

void AttentionQ4PartAvx2(const float* q_row, int64_t position, const ref::KvCacheView& cache,
                         float* scores, int64_t head_begin, int64_t head_end, int64_t key_begin,
                         int64_t key_end, float* parts, int64_t head_stride) {
  q4::AttendPart(kAvx2, q_row, position, cache, scores, head_begin, head_end, key_begin, key_end,
                 parts, head_stride);
}

}  // namespace staticlm::cpu::detail

#endif
