// The q4 attention primitives (fast_attention_q4.h) for AVX-512: heads of a multiple of 16 dims,
// up to four query heads of a KV head per pass, so that each code row is unpacked once for all.
#if defined(__x86_64__)
#include "backends/cpu/arch/x86/avx512_intrinsics.h"

#include <cmath>
#include <cstdint>

#include "backends/cpu/arch/x86/exp_avx2.h"
#include "backends/cpu/attention_simd.h"
#include "backends/cpu/fast_attention.h"
#include "backends/cpu/fast_attention_q4.h"

namespace staticlm::cpu::detail {
namespace {

using q4::Pass;

// Rows ahead of the one being read that are asked for early: at decode depth the cache streams
// from memory, and a KV head's rows are contiguous.
constexpr int64_t kPrefetchRows = 16;

// The 2n codes of n bytes at p as bytes in dimension order (low nibble first), n ≤ 8.
STATICLM_TARGET_AVX512_INLINE __m128i Unpack(__m128i bytes) {
  const __m128i mask = _mm_set1_epi8(0x0F);
  const __m128i low = _mm_and_si128(bytes, mask);
  const __m128i high = _mm_and_si128(_mm_srli_epi16(bytes, 4), mask);
  return _mm_unpacklo_epi8(low, high);
}

// Codes are used in "lane order": each whole 32 dims of a row [32p, 32p + 32) as two vectors,
// its 16 even dims then its 16 odd ones (a byte holds an even dim and the next one, so this is
// the order they unpack in), and a last 16 dims, if any, as they are. Queries and sums that meet
// codes are put in the same order (Split) and back (Merge).

// Sixteen codes (8 bytes at p) as f32, in dimension order.
STATICLM_TARGET_AVX512_INLINE __m512 Codes16(const uint8_t* p) {
  return _mm512_cvtepi32_ps(
      _mm512_cvtepu8_epi32(Unpack(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)))));
}

// Thirty-two codes (16 bytes at p) as f32: the even dims, the odd dims. The 4-bit codes index a
// table of 0 … 15 directly (vpermps reads the low four bits of each index).
STATICLM_TARGET_AVX512_INLINE void Codes32(const uint8_t* p, __m512* even, __m512* odd) {
  const __m512i bytes = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  const __m512 table = _mm512_setr_ps(0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f,
                                      10.0f, 11.0f, 12.0f, 13.0f, 14.0f, 15.0f);
  *even = _mm512_permutexvar_ps(bytes, table);
  *odd = _mm512_permutexvar_ps(_mm512_srli_epi32(bytes, 4), table);
}

// Dims [0, 32) in a, b → the even dims in a, the odd dims in b.
STATICLM_TARGET_AVX512_INLINE void Split(__m512* a, __m512* b) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  const __m512 e = _mm512_permutex2var_ps(*a, even, *b);
  *b = _mm512_permutex2var_ps(*a, odd, *b);
  *a = e;
}

// Split's inverse.
STATICLM_TARGET_AVX512_INLINE void Merge(__m512* a, __m512* b) {
  const __m512i low = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i high =
      _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  const __m512 l = _mm512_permutex2var_ps(*a, low, *b);
  *b = _mm512_permutex2var_ps(*a, high, *b);
  *a = l;
}

// Row i's dims [d, d + 32) as two vectors: codes in lane order, or f32 as they are.
template <bool kCodes>
STATICLM_TARGET_AVX512_INLINE void Load32(const uint8_t* base, int64_t hd, int64_t i, int64_t d,
                                          __m512* x, __m512* y) {
  if constexpr (kCodes) {
    Codes32(base + (i * hd + d) / 2, x, y);
  } else {
    const float* row = reinterpret_cast<const float*>(base) + i * hd + d;
    *x = _mm512_loadu_ps(row);
    *y = _mm512_loadu_ps(row + 16);
  }
}

// Row i's dims [d, d + 16), codes or f32, in dimension order.
template <bool kCodes>
STATICLM_TARGET_AVX512_INLINE __m512 Load16(const uint8_t* base, int64_t hd, int64_t i, int64_t d) {
  if constexpr (kCodes) {
    return Codes16(base + (i * hd + d) / 2);
  } else {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(base) + i * hd + d);
  }
}

STATICLM_TARGET_AVX512_INLINE void Prefetch(const uint8_t* p, int64_t bytes) {
  for (int64_t b = 0; b < bytes; b += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(p + b), _MM_HINT_T0);
  }
}

// The lane sums of a, b, c, d as the four lanes of one vector, in 512-bit steps: quarters
// [0] + [2] and [1] + [3] of a and b side by side (likewise c and d), then the two halves of each
// key, then the four lanes of each quarter.
STATICLM_TARGET_AVX512_INLINE __m128 SumFour(__m512 a, __m512 b, __m512 c, __m512 d) {
  const __m512 ab =
      _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
  const __m512 cd =
      _mm512_add_ps(_mm512_shuffle_f32x4(c, d, 0x44), _mm512_shuffle_f32x4(c, d, 0xEE));
  __m512 x = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, 0x88), _mm512_shuffle_f32x4(ab, cd, 0xDD));
  x = _mm512_add_ps(x, _mm512_permute_ps(x, 0x4E));
  x = _mm512_add_ps(x, _mm512_permute_ps(x, 0xB1));
  const __m512i firsts = _mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  return _mm512_castps512_ps128(_mm512_permutexvar_ps(firsts, x));
}

// The scores of `count` keys (codes of one group with its params, or f32 rows) for G heads,
// four keys per reduction.
template <bool kCodes, int G>
STATICLM_TARGET_AVX512 void ScoreAvx512(const Pass& h, const uint8_t* keys, const float* params,
                                        int64_t count, int64_t at, float* vmax) {
  const int64_t hd = h.head_dim, pairs = hd / 32;
  const bool single = hd % 32 != 0;  // a last 16 dims
  const int64_t row_bytes = kCodes ? hd / 2 : hd * 4;
  const __m128 scale = _mm_set1_ps(h.scale);
  __m128 bias[G], lanes_max[G];
  alignas(64) float lanes[G][256];  // codes: the queries times the scales, in lane order
  const float* q[G];
  for (int g = 0; g < G; ++g) {
    lanes_max[g] = _mm_set1_ps(-INFINITY);
    q[g] = h.q[g];
    if constexpr (kCodes) {
      // q · k = Σ (q ∘ scales) · codes + q · mins
      __m512 q_min = _mm512_setzero_ps();
      for (int64_t d = 0; d < hd; d += 16) {
        const __m512 x = _mm512_loadu_ps(h.q[g] + d);
        _mm512_store_ps(lanes[g] + d, _mm512_mul_ps(x, _mm512_loadu_ps(params + d)));
        q_min = _mm512_fmadd_ps(x, _mm512_loadu_ps(params + hd + d), q_min);
      }
      for (int64_t p = 0; p < pairs; ++p) {
        __m512 a = _mm512_load_ps(lanes[g] + 32 * p), b = _mm512_load_ps(lanes[g] + 32 * p + 16);
        Split(&a, &b);
        _mm512_store_ps(lanes[g] + 32 * p, a);
        _mm512_store_ps(lanes[g] + 32 * p + 16, b);
      }
      bias[g] = _mm_set1_ps(_mm512_reduce_add_ps(q_min));
      q[g] = lanes[g];
    } else {
      bias[g] = _mm_setzero_ps();
    }
  }
  int64_t i = 0;
  for (; i + 4 <= count; i += 4) {
    if (i + kPrefetchRows + 4 <= count)
      Prefetch(keys + (i + kPrefetchRows) * row_bytes, 4 * row_bytes);
    __m512 acc[G][4];
    for (int g = 0; g < G; ++g) {
      for (int j = 0; j < 4; ++j) acc[g][j] = _mm512_setzero_ps();
    }
    for (int64_t p = 0; p < pairs; ++p) {
      __m512 x[4], y[4];
      for (int j = 0; j < 4; ++j) Load32<kCodes>(keys, hd, i + j, 32 * p, &x[j], &y[j]);
      for (int g = 0; g < G; ++g) {
        const __m512 qx = _mm512_loadu_ps(q[g] + 32 * p), qy = _mm512_loadu_ps(q[g] + 32 * p + 16);
        for (int j = 0; j < 4; ++j) {
          acc[g][j] = _mm512_fmadd_ps(qy, y[j], _mm512_fmadd_ps(qx, x[j], acc[g][j]));
        }
      }
    }
    if (single) {
      __m512 key[4];
      for (int j = 0; j < 4; ++j) key[j] = Load16<kCodes>(keys, hd, i + j, hd - 16);
      for (int g = 0; g < G; ++g) {
        const __m512 qx = _mm512_loadu_ps(q[g] + hd - 16);
        for (int j = 0; j < 4; ++j) acc[g][j] = _mm512_fmadd_ps(qx, key[j], acc[g][j]);
      }
    }
    for (int g = 0; g < G; ++g) {
      const __m128 dots = SumFour(acc[g][0], acc[g][1], acc[g][2], acc[g][3]);
      const __m128 x = _mm_mul_ps(_mm_add_ps(dots, bias[g]), scale);
      _mm_storeu_ps(h.scores[g] + at + i, x);
      lanes_max[g] = _mm_max_ps(lanes_max[g], x);
    }
  }
  for (int g = 0; g < G; ++g) {
    __m128 m = _mm_max_ps(lanes_max[g], _mm_movehl_ps(lanes_max[g], lanes_max[g]));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    vmax[g] = vmax[g] > _mm_cvtss_f32(m) ? vmax[g] : _mm_cvtss_f32(m);
  }
  for (; i < count; ++i) {
    for (int g = 0; g < G; ++g) {
      __m512 acc = _mm512_setzero_ps();
      for (int64_t p = 0; p < pairs; ++p) {
        __m512 x, y;
        Load32<kCodes>(keys, hd, i, 32 * p, &x, &y);
        acc = _mm512_fmadd_ps(_mm512_loadu_ps(q[g] + 32 * p), x, acc);
        acc = _mm512_fmadd_ps(_mm512_loadu_ps(q[g] + 32 * p + 16), y, acc);
      }
      if (single) {
        acc = _mm512_fmadd_ps(_mm512_loadu_ps(q[g] + hd - 16), Load16<kCodes>(keys, hd, i, hd - 16),
                              acc);
      }
      const float x = (_mm512_reduce_add_ps(acc) + _mm_cvtss_f32(bias[g])) * h.scale;
      h.scores[g][at + i] = x;
      vmax[g] = vmax[g] > x ? vmax[g] : x;
    }
  }
}

// out[g][d0, d0 + 16·B) += Σ_i w_g(i) · values_i, w_g(i) the score (times the row's scale for
// codes): each value row is unpacked once for all heads; the sums stay in registers.
template <bool kCodes, int G, int B>
STATICLM_TARGET_AVX512 void AddBlockAvx512(const Pass& h, const uint8_t* values,
                                           const float* params, int64_t count, int64_t at,
                                           int64_t d0) {
  const int64_t hd = h.head_dim;
  const int64_t row_bytes = kCodes ? hd / 2 : hd * 4;
  // Whole 32 dims in pairs of vectors (codes: in lane order), then a last 16 (B odd: the row's
  // last 16 dims, since d0 is a multiple of 64).
  constexpr int kPairs = B / 2;
  __m512 acc[G][B];
  for (int g = 0; g < G; ++g) {
    for (int j = 0; j < B; ++j) acc[g][j] = _mm512_loadu_ps(h.out[g] + d0 + 16 * j);
    if constexpr (kCodes) {
      for (int p = 0; p < kPairs; ++p) Split(&acc[g][2 * p], &acc[g][2 * p + 1]);
    }
  }
  for (int64_t i = 0; i < count; ++i) {
    if (d0 == 0 && i + kPrefetchRows < count) {
      Prefetch(values + (i + kPrefetchRows) * row_bytes, row_bytes);
    }
    __m512 value[B];
    for (int p = 0; p < kPairs; ++p) {
      Load32<kCodes>(values, hd, i, d0 + 32 * p, &value[2 * p], &value[2 * p + 1]);
    }
    if constexpr (B % 2 == 1) value[B - 1] = Load16<kCodes>(values, hd, i, d0 + 32 * kPairs);
    const float row_scale = kCodes ? params[2 * i] : 1.0f;
    for (int g = 0; g < G; ++g) {
      const __m512 w = _mm512_set1_ps(h.scores[g][at + i] * row_scale);
      for (int j = 0; j < B; ++j) acc[g][j] = _mm512_fmadd_ps(w, value[j], acc[g][j]);
    }
  }
  for (int g = 0; g < G; ++g) {
    if constexpr (kCodes) {
      for (int p = 0; p < kPairs; ++p) Merge(&acc[g][2 * p], &acc[g][2 * p + 1]);
    }
    for (int j = 0; j < B; ++j) _mm512_storeu_ps(h.out[g] + d0 + 16 * j, acc[g][j]);
  }
}

template <bool kCodes, int G>
STATICLM_TARGET_AVX512 void AddAvx512(const Pass& h, const uint8_t* values, const float* params,
                                      int64_t count, int64_t at) {
  const int64_t hd = h.head_dim;
  for (int64_t d0 = 0; d0 < hd; d0 += 64) {
    switch ((hd - d0 >= 64 ? 64 : hd - d0) / 16) {
      case 4:
        AddBlockAvx512<kCodes, G, 4>(h, values, params, count, at, d0);
        break;
      case 3:
        AddBlockAvx512<kCodes, G, 3>(h, values, params, count, at, d0);
        break;
      case 2:
        AddBlockAvx512<kCodes, G, 2>(h, values, params, count, at, d0);
        break;
      default:
        AddBlockAvx512<kCodes, G, 1>(h, values, params, count, at, d0);
        break;
    }
  }
}

void ScoreCodesAvx512(const Pass& h, const uint8_t* codes, const float* params, int64_t count,
                      int64_t at, float* vmax) {
  WithGroupSize(h.n,
                [&](auto g) { ScoreAvx512<true, g.value>(h, codes, params, count, at, vmax); });
}

void ScoreRowsAvx512(const Pass& h, const float* rows, int64_t count, int64_t at, float* vmax) {
  const auto* keys = reinterpret_cast<const uint8_t*>(rows);
  WithGroupSize(h.n,
                [&](auto g) { ScoreAvx512<false, g.value>(h, keys, nullptr, count, at, vmax); });
}

void AddCodesAvx512(const Pass& h, const uint8_t* codes, const float* params, int64_t count,
                    int64_t at, float* bias) {
  WithGroupSize(h.n, [&](auto g) { AddAvx512<true, g.value>(h, codes, params, count, at); });
  q4::AddMins(h, params, count, at, bias);
}

void AddRowsAvx512(const Pass& h, const float* rows, int64_t count, int64_t at) {
  const auto* values = reinterpret_cast<const uint8_t*>(rows);
  WithGroupSize(h.n, [&](auto g) { AddAvx512<false, g.value>(h, values, nullptr, count, at); });
}

STATICLM_TARGET_AVX512 float ExpSum(float* x, int64_t n, float max) {
  return ExpSumInPlaceAvx2(x, n, max);
}

constexpr q4::Kernels kAvx512{q4::kMaxHeads,  ScoreCodesAvx512, ScoreRowsAvx512,
                              AddCodesAvx512, AddRowsAvx512,    ExpSum};

}  // namespace

void AttentionQ4Avx512(const float* q, int64_t rows, int32_t first_position,
                       const ref::KvCacheView& cache, float* scores, float* out, int64_t head_begin,
                       int64_t head_end) {
  q4::Attend(kAvx512, q, rows, first_position, cache, scores, out, head_begin, head_end);
}

void AttentionQ4PartAvx512(const float* q_row, int64_t position, const ref::KvCacheView& cache,
                           float* scores, int64_t head_begin, int64_t head_end, int64_t key_begin,
                           int64_t key_end, float* parts, int64_t head_stride) {
  q4::AttendPart(kAvx512, q_row, position, cache, scores, head_begin, head_end, key_begin, key_end,
                 parts, head_stride);
}

}  // namespace staticlm::cpu::detail

#endif
