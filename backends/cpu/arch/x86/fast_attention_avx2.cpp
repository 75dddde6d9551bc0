// AVX2 attention that serves the query heads sharing a KV head together (grouped- and
// multi-query attention), as the AVX-512 kernel does at half the width: each key and value row
// is loaded and converted once for up to four heads. At decode depth the cache streams from
// memory, so reading it once per KV head instead of once per query head is most of the step's
// attention time (SmolLM2: 3 query heads a KV head; Gemma 3: 4). The values are summed over
// tiles of kTileKeys positions whose rows stay in L1 while the accumulators of every head pass
// over them, so each value row also leaves memory once however wide the head. Same contract and
// cache policies as ref::Attention, for f16, f32 and q8 caches (q4: fast_attention_q4_avx2.cpp;
// SelectAttention routes them).
#include <cmath>
#include <cstdint>

#include "backends/cpu/arch/x86/exp_avx2.h"
#include "backends/cpu/arch/x86/lane_sums_avx2.h"
#include "backends/cpu/attention_simd.h"
#include "backends/cpu/attention_split.h"
#include "backends/cpu/fast_attention.h"
#include "backends/cpu/hadamard.h"
#include "contract/kv_policy.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define STATICLM_AVX2_ATTN __attribute__((target("avx2,fma,f16c")))
#define STATICLM_AVX2_ATTN_INLINE __attribute__((target("avx2,fma,f16c"), always_inline)) inline

namespace staticlm::cpu::detail {
namespace {

constexpr int kMaxGroup = kMaxGroupHeads;  // query heads served per pass over the cache
constexpr int64_t kMaxHeadDim = kMaxGroupedHeadDim;
// Positions whose value rows are summed into every head's accumulators before the next ones
// load: 32 rows of a 256-wide f16 head are 16 KiB, in L1 beside the 4 KiB of accumulators.
constexpr int64_t kTileKeys = 32;
// Keys ahead of the one being scored whose lines are asked for early (as the AVX-512 kernel).
constexpr int64_t kPrefetchKeys = 32;

// Eight values of a cache row as f32 (q8 values not yet scaled).
template <KvKind K>
STATICLM_AVX2_ATTN_INLINE __m256 Load8(const uint8_t* base, int64_t index) {
  if constexpr (K == KvKind::kF16) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(base + index * 2)));
  } else if constexpr (K == KvKind::kF32) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(base + index * 4));
  } else {
    return _mm256_cvtepi32_ps(
        _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(base + index))));
  }
}

STATICLM_AVX2_ATTN_INLINE void Prefetch(const uint8_t* p, int64_t bytes) {
  for (int64_t b = 0; b < bytes; b += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(p + b), _MM_HINT_T0);
  }
}

// The heads of one pass: their queries (already in the cache's basis) and score rows.
using Heads = GroupHeads;

// scores[g][at + i] = scale · q_g · key(run.slot + i), J keys at a time (J accumulators per head
// in registers, each key converted once and used by every head at once: 4 keys for up to three
// heads, 2 for four); vmax[g] keeps head g's largest score.
template <KvKind K, int G>
STATICLM_AVX2_ATTN void ScoreRun(const Heads& h, const KvRows& k, int64_t hd, SlotRun run,
                                 int64_t at, float scale, float* vmax) {
  constexpr int J = G <= 3 ? 4 : 2;
  const __m128 scales = _mm_set1_ps(scale);
  __m128 lanes_max[G];
  for (__m128& m : lanes_max) m = _mm_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + J <= run.count; i += J) {
    __m256 acc[G][J];
    for (int g = 0; g < G; ++g) {
      for (int j = 0; j < J; ++j) acc[g][j] = _mm256_setzero_ps();
    }
    const int64_t row = (run.slot + i) * hd;
    if (i + kPrefetchKeys + J <= run.count) {
      Prefetch(k.base + (row + kPrefetchKeys * hd) * KvBytes<K>(), J * hd * KvBytes<K>());
    }
    for (int64_t d = 0; d < hd; d += 8) {
      for (int j = 0; j < J; ++j) {
        const __m256 key = Load8<K>(k.base, row + j * hd + d);
        for (int g = 0; g < G; ++g) {
          acc[g][j] = _mm256_fmadd_ps(_mm256_loadu_ps(h.q[g] + d), key, acc[g][j]);
        }
      }
    }
    // q8: each key's row scale after the common one, as the one-key loop below multiplies.
    __m128 key_scales = _mm_set1_ps(1.0f);
    if constexpr (K == KvKind::kI8) {
      const float* rows = k.scales + run.slot + i;
      key_scales = J == 4 ? _mm_loadu_ps(rows) : _mm_setr_ps(rows[0], rows[1], 1.0f, 1.0f);
    }
    for (int g = 0; g < G; ++g) {
      alignas(16) float sums[4] = {};
      LaneSums<J>(acc[g], sums);
      __m128 x = _mm_mul_ps(_mm_load_ps(sums), scales);
      if constexpr (K == KvKind::kI8) x = _mm_mul_ps(x, key_scales);
      if constexpr (J == 4) {
        _mm_storeu_ps(h.scores[g] + at + i, x);
        lanes_max[g] = _mm_max_ps(lanes_max[g], x);
      } else {  // lanes 2 and 3 are not keys: the max sees lanes 0 and 1 twice instead
        alignas(16) float lanes[4];
        _mm_store_ps(lanes, x);
        h.scores[g][at + i] = lanes[0];
        h.scores[g][at + i + 1] = lanes[1];
        lanes_max[g] = _mm_max_ps(lanes_max[g], _mm_movelh_ps(x, x));
      }
    }
  }
  for (int g = 0; g < G; ++g) {
    __m128 m = _mm_max_ps(lanes_max[g], _mm_movehl_ps(lanes_max[g], lanes_max[g]));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    vmax[g] = vmax[g] > _mm_cvtss_f32(m) ? vmax[g] : _mm_cvtss_f32(m);
  }
  for (; i < run.count; ++i) {
    const int64_t slot = run.slot + i;
    for (int g = 0; g < G; ++g) {
      __m256 acc = _mm256_setzero_ps();
      for (int64_t d = 0; d < hd; d += 8) {
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(h.q[g] + d), Load8<K>(k.base, slot * hd + d), acc);
      }
      float x;
      LaneSums<1>(&acc, &x);
      x *= scale;
      if constexpr (K == KvKind::kI8) x *= k.scales[slot];
      h.scores[g][at + i] = x;
      vmax[g] = vmax[g] > x ? vmax[g] : x;
    }
  }
}

// sum[g][d0 … d0 + 8B) += Σ_i p_g(at + i) · value(slot + i)[same dims], for the `count` (at most
// kTileKeys) positions from `slot`: B registers per head, G·B + B + 1 of the 16 in use.
template <KvKind K, int G, int B>
STATICLM_AVX2_ATTN_INLINE void AddTileDims(const Heads& h, const KvRows& v, int64_t hd, int64_t d0,
                                           int64_t slot, int64_t count, int64_t at,
                                           float (*sum)[kMaxHeadDim]) {
  __m256 acc[G][B];
  for (int g = 0; g < G; ++g) {
    for (int b = 0; b < B; ++b) acc[g][b] = _mm256_loadu_ps(sum[g] + d0 + 8 * b);
  }
  for (int64_t i = 0; i < count; ++i) {
    float row_scale = 1.0f;
    if constexpr (K == KvKind::kI8) row_scale = v.scales[slot + i];
    __m256 value[B];
    for (int b = 0; b < B; ++b) value[b] = Load8<K>(v.base, (slot + i) * hd + d0 + 8 * b);
    for (int g = 0; g < G; ++g) {
      const __m256 w = _mm256_set1_ps(h.scores[g][at + i] * row_scale);
      for (int b = 0; b < B; ++b) acc[g][b] = _mm256_fmadd_ps(w, value[b], acc[g][b]);
    }
  }
  for (int g = 0; g < G; ++g) {
    for (int b = 0; b < B; ++b) _mm256_storeu_ps(sum[g] + d0 + 8 * b, acc[g][b]);
  }
}

// The values of a run, tile by tile: every dimension block of a tile before the next tile.
template <KvKind K, int G>
STATICLM_AVX2_ATTN void AccumulateRun(const Heads& h, const KvRows& v, int64_t hd, SlotRun run,
                                      int64_t at, float (*sum)[kMaxHeadDim]) {
  constexpr int B = G <= 2 ? 4 : (G == 3 ? 3 : 2);
  for (int64_t t = 0; t < run.count; t += kTileKeys) {
    const int64_t count = run.count - t < kTileKeys ? run.count - t : kTileKeys;
    if (t + kTileKeys < run.count) {
      Prefetch(v.base + (run.slot + t + kTileKeys) * hd * KvBytes<K>(),
               (run.count - t - kTileKeys < kTileKeys ? run.count - t - kTileKeys : kTileKeys) *
                   hd * KvBytes<K>());
    }
    int64_t d0 = 0;
    for (; d0 + 8 * B <= hd; d0 += 8 * B) {
      AddTileDims<K, G, B>(h, v, hd, d0, run.slot + t, count, at + t, sum);
    }
    for (; d0 < hd; d0 += 8) AddTileDims<K, G, 1>(h, v, hd, d0, run.slot + t, count, at + t, sum);
  }
}

// Query heads [h0, h0 + G) of one row, all reading KV head h0 / group, over keys [key_begin,
// key_end) of those the row attends: scores, their largest (vmax), e^(score − vmax) in place and
// its sum (sums), and the unnormalised weighted values (values, G rows of kMaxHeadDim).
template <KvKind K, int G>
STATICLM_AVX2_ATTN void AttendGroupKeys(const float* q_row, int64_t position,
                                        const ref::KvCacheView& c, int64_t h0, float* scores_all,
                                        int64_t key_begin, int64_t key_end, float* vmax,
                                        float* sums, float (*values)[kMaxHeadDim]) {
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
  for (int g = 0; g < G; ++g) {
    sums[g] = ExpSumInPlaceAvx2(pass.direct.scores[g] + key_begin, key_end - key_begin, vmax[g]);
    for (int64_t d = 0; d < hd; ++d) values[g][d] = 0.0f;
  }
  for (int i = 0; i < pieces.n; ++i) {
    AccumulateRun<K, G>(pass.direct, pass.v, hd, pieces.piece[i].run, pieces.piece[i].at, values);
  }
}

// Query heads [h0, h0 + G) of one row over every key it attends: softmax-weighted values.
template <KvKind K, int G>
STATICLM_AVX2_ATTN void AttendGroup(const float* q_row, int64_t position, const ref::KvCacheView& c,
                                    int64_t h0, float* scores_all, float* out_row) {
  const int64_t hd = c.params.head_dim;
  float vmax[G], sums[G];
  alignas(32) float values[G][kMaxHeadDim];
  AttendGroupKeys<K, G>(q_row, position, c, h0, scores_all, 0, AttendedKeys(c.params, position),
                        vmax, sums, values);
  for (int g = 0; g < G; ++g) {
    float* out = out_row + (h0 + g) * hd;
    const __m256 scale = _mm256_set1_ps(1.0f / sums[g]);
    for (int64_t d = 0; d < hd; d += 8) {
      _mm256_storeu_ps(out + d, _mm256_mul_ps(_mm256_loadu_ps(values[g] + d), scale));
    }
    if (c.params.kv_quant == KvQuant::kQ8) Hadamard(out, hd);
  }
}

// The same over keys [key_begin, key_end): each head's part (attention_split.h).
template <KvKind K, int G>
STATICLM_AVX2_ATTN void AttendGroupPart(const float* q_row, int64_t position,
                                        const ref::KvCacheView& c, int64_t h0, float* scores_all,
                                        int64_t key_begin, int64_t key_end, float* parts,
                                        int64_t head_stride) {
  const int64_t hd = c.params.head_dim;
  float vmax[G], sums[G];
  alignas(32) float values[G][kMaxHeadDim];
  AttendGroupKeys<K, G>(q_row, position, c, h0, scores_all, key_begin, key_end, vmax, sums, values);
  for (int g = 0; g < G; ++g) {
    float* part = parts + g * head_stride;
    part[0] = vmax[g];
    part[1] = sums[g];
    for (int64_t d = 0; d < hd; ++d) part[2 + d] = values[g][d];
  }
}

// The passes of this kernel (attention_simd.h's AttendRows and AttendPart run them).
struct Avx2Grouped {
  static constexpr int64_t kMaxGroup = detail::kMaxGroup;
  template <KvKind K, int G>
  static constexpr auto Group = AttendGroup<K, G>;
  template <KvKind K, int G>
  static constexpr auto Part = AttendGroupPart<K, G>;
};

}  // namespace

bool Avx2AttentionTakes(int64_t head_dim) {
  return head_dim % 8 == 0 && head_dim <= kMaxHeadDim;
}

void AttentionAvx2(const float* q, int64_t rows, int32_t first_position,
                   const ref::KvCacheView& cache, float* scores, float* out, int64_t head_begin,
                   int64_t head_end) {
  if (cache.params.kv_quant == KvQuant::kQ4) {
    AttentionQ4Avx2(q, rows, first_position, cache, scores, out, head_begin, head_end);
    return;
  }
  AttendRows<Avx2Grouped>(q, rows, first_position, cache, scores, out, head_begin, head_end);
}

void AttentionPartAvx2(const float* q_row, int64_t position, const ref::KvCacheView& cache,
                       float* scores, int64_t head_begin, int64_t head_end, int64_t key_begin,
                       int64_t key_end, float* parts, int64_t head_stride) {
  AttendPart<Avx2Grouped>(q_row, position, cache, scores, head_begin, head_end, key_begin, key_end,
                          parts, head_stride);
}

}  // namespace staticlm::cpu::detail

#endif
