// AVX-512 attention that serves the query heads sharing a KV head together (grouped-query
// attention): each key and value row is loaded and converted once for up to four heads, and
// the dot products are summed four keys per reduction. At decode depth the cache is read from
// memory once per KV head instead of once per query head, and the arithmetic per (head, key)
// is a fraction of the AVX2 kernel's. Same contract and cache policies as ref::Attention, for
// f16, f32 and q8 caches (q4: fast_attention_q4_avx512.cpp; SelectAttention routes them).
#include <cmath>
#include <cstdint>

#include "backends/cpu/arch/x86/exp_avx2.h"
#include "backends/cpu/attention_simd.h"
#include "backends/cpu/attention_split.h"
#include "backends/cpu/fast_attention.h"
#include "backends/cpu/hadamard.h"
#include "contract/kv_policy.h"

#if defined(__x86_64__)
#include "backends/cpu/arch/x86/avx512_intrinsics.h"

namespace staticlm::cpu::detail {
namespace {

constexpr int kMaxGroup = kMaxGroupHeads;  // query heads served per pass over the cache
constexpr int64_t kMaxHeadDim = kMaxGroupedHeadDim;

// Sixteen values of a cache row as f32 (q8 values not yet scaled).
template <KvKind K>
STATICLM_TARGET_AVX512_INLINE __m512 Load16(const uint8_t* base, int64_t index) {
  if constexpr (K == KvKind::kF16) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(base + index * 2)));
  } else if constexpr (K == KvKind::kF32) {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(base + index * 4));
  } else {
    return _mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(base + index))));
  }
}

// x's upper eight lanes added to its lower eight.
STATICLM_TARGET_AVX512_INLINE __m256 FoldHalves(__m512 x) {
  const __m256 high = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1));
  return _mm256_add_ps(_mm512_castps512_ps256(x), high);
}

// The lane sums of a, b, c, d as the four lanes of one vector.
STATICLM_TARGET_AVX512_INLINE __m128 SumFour(__m512 a, __m512 b, __m512 c, __m512 d) {
  const __m256 ab = _mm256_hadd_ps(FoldHalves(a), FoldHalves(b));
  const __m256 cd = _mm256_hadd_ps(FoldHalves(c), FoldHalves(d));
  const __m256 abcd = _mm256_hadd_ps(ab, cd);
  return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
}

// Keys ahead of the one being read that are asked for early: the cache streams from memory at
// decode depth, and the rows of one KV head are contiguous.
constexpr int64_t kPrefetchKeys = 32;

// Asks for the cache lines of `bytes` bytes at `p` (into L1).
STATICLM_TARGET_AVX512_INLINE void Prefetch(const uint8_t* p, int64_t bytes) {
  for (int64_t b = 0; b < bytes; b += 64)
    _mm_prefetch(reinterpret_cast<const char*>(p + b), _MM_HINT_T0);
}

// The heads of one pass: their queries (already in the cache's basis) and score rows.
using Heads = GroupHeads;

// scores[g][at + i] = scale · q_g · key(run.slot + i), four keys at a time; vmax[g] keeps the
// largest score of head g.
template <KvKind K, int G>
STATICLM_TARGET_AVX512 void ScoreRun(const Heads& h, const KvRows& k, int64_t hd, SlotRun run,
                                     int64_t at, float scale, float* vmax) {
  const int64_t blocks = hd / 16;
  const __m128 s = _mm_set1_ps(scale);
  __m128 lanes_max[G];
  for (__m128& m : lanes_max) m = _mm_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 4 <= run.count; i += 4) {
    __m512 acc[G][4];
    for (int g = 0; g < G; ++g) {
      for (int j = 0; j < 4; ++j) acc[g][j] = _mm512_setzero_ps();
    }
    const int64_t row = (run.slot + i) * hd;
    if (i + kPrefetchKeys + 4 <= run.count) {
      Prefetch(k.base + (row + kPrefetchKeys * hd) * KvBytes<K>(), 4 * hd * KvBytes<K>());
    }
    for (int64_t b = 0; b < blocks; ++b) {
      __m512 key[4];
      for (int j = 0; j < 4; ++j) key[j] = Load16<K>(k.base, row + j * hd + 16 * b);
      for (int g = 0; g < G; ++g) {
        const __m512 q = _mm512_loadu_ps(h.q[g] + 16 * b);
        for (int j = 0; j < 4; ++j) acc[g][j] = _mm512_fmadd_ps(q, key[j], acc[g][j]);
      }
    }
    __m128 row_scale = s;
    if constexpr (K == KvKind::kI8)
      row_scale = _mm_mul_ps(s, _mm_loadu_ps(k.scales + run.slot + i));
    for (int g = 0; g < G; ++g) {
      const __m128 x = _mm_mul_ps(SumFour(acc[g][0], acc[g][1], acc[g][2], acc[g][3]), row_scale);
      _mm_storeu_ps(h.scores[g] + at + i, x);
      lanes_max[g] = _mm_max_ps(lanes_max[g], x);
    }
  }
  for (int g = 0; g < G; ++g) {
    __m128 m = _mm_max_ps(lanes_max[g], _mm_movehl_ps(lanes_max[g], lanes_max[g]));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    vmax[g] = vmax[g] > _mm_cvtss_f32(m) ? vmax[g] : _mm_cvtss_f32(m);
  }
  for (; i < run.count; ++i) {
    const int64_t slot = run.slot + i;
    float row_scale = scale;
    if constexpr (K == KvKind::kI8) row_scale *= k.scales[slot];
    for (int g = 0; g < G; ++g) {
      __m512 acc = _mm512_setzero_ps();
      for (int64_t b = 0; b < blocks; ++b) {
        acc = _mm512_fmadd_ps(_mm512_loadu_ps(h.q[g] + 16 * b),
                              Load16<K>(k.base, slot * hd + 16 * b), acc);
      }
      const float x = _mm512_reduce_add_ps(acc) * row_scale;
      h.scores[g][at + i] = x;
      vmax[g] = vmax[g] > x ? vmax[g] : x;
    }
  }
}

// acc[g][j] += p_g(at + i) · value(run.slot + i), dims [d0, d0 + 16·B), for every key of the run:
// each value row is loaded once for all heads; the accumulators stay in registers.
template <KvKind K, int G, int B>
STATICLM_TARGET_AVX512 void AccumulateRun(const Heads& h, const KvRows& v, int64_t hd, int64_t d0,
                                          SlotRun run, int64_t at, __m512 (&acc)[G][4]) {
  for (int64_t i = 0; i < run.count; ++i) {
    const int64_t slot = run.slot + i;
    if (i + kPrefetchKeys < run.count) {
      Prefetch(v.base + ((slot + kPrefetchKeys) * hd + d0) * KvBytes<K>(), 16 * B * KvBytes<K>());
    }
    __m512 value[B];
    for (int j = 0; j < B; ++j) value[j] = Load16<K>(v.base, slot * hd + d0 + 16 * j);
    float row_scale = 1.0f;
    if constexpr (K == KvKind::kI8) row_scale = v.scales[slot];
    for (int g = 0; g < G; ++g) {
      const __m512 w = _mm512_set1_ps(h.scores[g][at + i] * row_scale);
      for (int j = 0; j < B; ++j) acc[g][j] = _mm512_fmadd_ps(w, value[j], acc[g][j]);
    }
  }
}

// The weighted values of the pieces' keys, dims [d0, d0 + 16·B), times scale_by[g] into
// out[g].
template <KvKind K, int G, int B>
STATICLM_TARGET_AVX512 void AccumulateBlock(const Heads& h, const Pieces& pieces, const KvRows& v,
                                            int64_t hd, int64_t d0, const float* scale_by,
                                            float* const* out) {
  __m512 acc[G][4];
  for (int g = 0; g < G; ++g) {
    for (int j = 0; j < 4; ++j) acc[g][j] = _mm512_setzero_ps();
  }
  for (int i = 0; i < pieces.n; ++i) {
    AccumulateRun<K, G, B>(h, v, hd, d0, pieces.piece[i].run, pieces.piece[i].at, acc);
  }
  for (int g = 0; g < G; ++g) {
    const __m512 scale = _mm512_set1_ps(scale_by[g]);
    for (int j = 0; j < B; ++j)
      _mm512_storeu_ps(out[g] + d0 + 16 * j, _mm512_mul_ps(acc[g][j], scale));
  }
}

// out_g = scale_by[g] · the weighted sum of the pieces' values, 64 dims (four registers per
// head) at a time.
template <KvKind K, int G>
STATICLM_TARGET_AVX512 void Accumulate(const Heads& h, const Pieces& pieces, const KvRows& v,
                                       int64_t hd, const float* scale_by, float* const* out) {
  for (int64_t d0 = 0; d0 < hd; d0 += 64) {
    switch ((hd - d0 >= 64 ? 64 : hd - d0) / 16) {
      case 4:
        AccumulateBlock<K, G, 4>(h, pieces, v, hd, d0, scale_by, out);
        break;
      case 3:
        AccumulateBlock<K, G, 3>(h, pieces, v, hd, d0, scale_by, out);
        break;
      case 2:
        AccumulateBlock<K, G, 2>(h, pieces, v, hd, d0, scale_by, out);
        break;
      default:
        AccumulateBlock<K, G, 1>(h, pieces, v, hd, d0, scale_by, out);
        break;
    }
  }
}

// Query heads [h0, h0 + G) of one row, all reading KV head h0 / group, over keys [key_begin,
// key_end) of those the row attends: scores, their largest (vmax), e^(score − vmax) in place and
// its sum (sums), then the weighted values into values[g] (head_dim floats each), divided by the
// sum when `normalise` (the whole softmax) or not (a part's).
template <KvKind K, int G>
STATICLM_TARGET_AVX512 void AttendGroupKeys(const float* q_row, int64_t position,
                                            const ref::KvCacheView& c, int64_t h0,
                                            float* scores_all, int64_t key_begin, int64_t key_end,
                                            bool normalise, float* vmax, float* sums,
                                            float* const* values) {
  const OpParams& p = c.params;
  const int64_t hd = p.head_dim;
  const Pieces pieces = PiecesOf(p, position, key_begin, key_end);
  const GroupPass<K, G> pass(q_row, position, c, h0, key_begin, scores_all);
  for (int g = 0; g < G; ++g) vmax[g] = -INFINITY;
  for (int i = 0; i < pieces.n; ++i) {
    const Piece& piece = pieces.piece[i];
    ScoreRun<K, G>(piece.sinks ? pass.sinks : pass.direct, pass.k, hd, piece.run, piece.at, p.scale,
                   vmax);
  }
  float scale_by[G];
  for (int g = 0; g < G; ++g) {
    sums[g] = ExpSumInPlaceAvx2(pass.direct.scores[g] + key_begin, key_end - key_begin, vmax[g]);
    scale_by[g] = normalise ? 1.0f / sums[g] : 1.0f;
  }
  Accumulate<K, G>(pass.direct, pieces, pass.v, hd, scale_by, values);
}

// Query heads [h0, h0 + G) of one row over every key it attends: softmax-weighted values.
template <KvKind K, int G>
STATICLM_TARGET_AVX512 void AttendGroup(const float* q_row, int64_t position,
                                        const ref::KvCacheView& c, int64_t h0, float* scores_all,
                                        float* out_row) {
  const int64_t hd = c.params.head_dim;
  float vmax[G], sums[G];
  float* out[G];
  for (int g = 0; g < G; ++g) out[g] = out_row + (h0 + g) * hd;
  AttendGroupKeys<K, G>(q_row, position, c, h0, scores_all, 0, AttendedKeys(c.params, position),
                        true, vmax, sums, out);
  if (c.params.kv_quant == KvQuant::kQ8) {
    for (int g = 0; g < G; ++g) Hadamard(out[g], hd);
  }
}

// The same over keys [key_begin, key_end): each head's part (attention_split.h), its values
// written in place after its max and sum.
template <KvKind K, int G>
STATICLM_TARGET_AVX512 void AttendGroupPart(const float* q_row, int64_t position,
                                            const ref::KvCacheView& c, int64_t h0,
                                            float* scores_all, int64_t key_begin, int64_t key_end,
                                            float* parts, int64_t head_stride) {
  float vmax[G], sums[G];
  float* values[G];
  for (int g = 0; g < G; ++g) values[g] = parts + g * head_stride + 2;
  AttendGroupKeys<K, G>(q_row, position, c, h0, scores_all, key_begin, key_end, false, vmax, sums,
                        values);
  for (int g = 0; g < G; ++g) {
    parts[g * head_stride] = vmax[g];
    parts[g * head_stride + 1] = sums[g];
  }
}

// The passes of this kernel (attention_simd.h's AttendRows and AttendPart run them).
struct Avx512Grouped {
  static constexpr int64_t kMaxGroup = detail::kMaxGroup;
  template <KvKind K, int G>
  static constexpr auto Group = AttendGroup<K, G>;
  template <KvKind K, int G>
  static constexpr auto Part = AttendGroupPart<K, G>;
};

}  // namespace

bool Avx512AttentionTakes(int64_t head_dim) {
  return head_dim % 16 == 0 && head_dim <= kMaxHeadDim;
}

void AttentionAvx512(const float* q, int64_t rows, int32_t first_position,
                     const ref::KvCacheView& cache, float* scores, float* out, int64_t head_begin,
                     int64_t head_end) {
  if (cache.params.kv_quant == KvQuant::kQ4) {
    ref::Attention(q, rows, first_position, cache, scores, out, head_begin, head_end);
    return;
  }
  AttendRows<Avx512Grouped>(q, rows, first_position, cache, scores, out, head_begin, head_end);
}

void AttentionPartAvx512(const float* q_row, int64_t position, const ref::KvCacheView& cache,
                         float* scores, int64_t head_begin, int64_t head_end, int64_t key_begin,
                         int64_t key_end, float* parts, int64_t head_stride) {
  AttendPart<Avx512Grouped>(q_row, position, cache, scores, head_begin, head_end, key_begin,
                            key_end, parts, head_stride);
}

}  // namespace staticlm::cpu::detail

#endif
