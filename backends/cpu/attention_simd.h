// What the SIMD attention kernels (arch/x86/fast_attention_avx2.cpp and _avx512.cpp,
// arch/arm/fast_attention_neon.cpp) share: how they walk a cache — the slots of consecutive
// positions under the layer's policy, without a division per key, and the runs of them a query
// attends, whole or a split part's — and the loops over heads and rows around the per-ISA work.
#pragma once

#include <cstdint>
#include <type_traits>

#include "backends/cpu/hadamard.h"
#include "backends/cpu/reference_kernels.h"
#include "contract/kv_policy.h"

namespace staticlm::cpu {

// The slots of positions first … first + n − 1, in order: consecutive, wrapping from `wrap_at`
// to `wrap_to` (the policy's ring).
struct SlotWalk {
  int64_t slot, wrap_at, wrap_to;
  int64_t Next() {
    int64_t s = slot++;
    if (slot == wrap_at) slot = wrap_to;
    return s;
  }
};

inline SlotWalk WalkFrom(const OpParams& p, int64_t position) {
  return {KvSlot(p, position), p.cache_slots,
          p.cache_policy == CachePolicy::kSink ? int64_t{p.sinks} : 0};
}

// The storage of the cache rows a grouped kernel (AVX2, AVX-512) is instantiated for, and its
// bytes per value.
enum class KvKind { kF16, kF32, kI8 };

template <KvKind K>
constexpr int64_t KvBytes() {
  return K == KvKind::kF32 ? 4 : (K == KvKind::kF16 ? 2 : 1);
}

// A run of keys or values in consecutive slots.
struct SlotRun {
  int64_t slot, count;
};

// The runs a query at `position` attends, in score order: the sinks (scored with the query
// turned to its position inside the cache), then the recent positions, split where the ring
// wraps.
struct AttendedRuns {
  SlotRun sinks;
  SlotRun recent[2];
  int n_recent = 0;
};

inline AttendedRuns RunsOf(const OpParams& p, const AttendedSpans& span, int64_t position) {
  AttendedRuns r;
  r.sinks = {0, span.sink_end};
  const int64_t count = position >= span.begin ? position - span.begin + 1 : 0;
  if (count == 0) return r;
  const SlotWalk walk = WalkFrom(p, span.begin);
  const int64_t first = walk.wrap_at - walk.slot < count ? walk.wrap_at - walk.slot : count;
  r.recent[r.n_recent++] = {walk.slot, first};
  if (first < count) r.recent[r.n_recent++] = {walk.wrap_to, count - first};
  return r;
}

// One KV head's keys or values: rows of head_dim at `base`, with q8 scales beside.
struct KvRows {
  DType type;
  const uint8_t* base;
  const float* scales;  // q8 only
};

// The grouped kernels (AVX2, AVX-512): query heads served per pass over a KV head's cache, and
// the widest head they take.
constexpr int kMaxGroupHeads = 4;
constexpr int64_t kMaxGroupedHeadDim = 256;

// The query heads of one pass: their queries (in the cache's basis) and score rows.
struct GroupHeads {
  const float* q[kMaxGroupHeads];
  float* scores[kMaxGroupHeads];
};

// What a grouped kernel's pass over query heads [h0, h0 + G) of one row at `position` reads
// besides the cache's keys [key_begin, …): its KV head's key and value rows, and the heads'
// queries in the cache's basis (a q8 cache holds Hadamard-rotated rows; the callers turn the
// outputs back) — `direct` for the recent keys and, when the keys reach the sinks, `sinks`
// turned to their position inside the cache. Refers to itself: not copied.
template <KvKind K, int G>
struct GroupPass {
  KvRows k, v;
  GroupHeads direct{}, sinks{};
  alignas(64) float basis[G][kMaxGroupedHeadDim];
  alignas(64) float rotated[G][kMaxGroupedHeadDim];

  GroupPass(const float* q_row, int64_t position, const ref::KvCacheView& c, int64_t h0,
            int64_t key_begin, float* scores_all) {
    const OpParams& p = c.params;
    const int64_t hd = p.head_dim;
    const int64_t first_row = h0 / (p.n_heads / p.n_kv_heads) * p.cache_slots;
    k = {c.type, c.k + first_row * hd * KvBytes<K>(),
         c.k_side != nullptr ? c.k_side + first_row : nullptr};
    v = {c.type, c.v + first_row * hd * KvBytes<K>(),
         c.v_side != nullptr ? c.v_side + first_row : nullptr};
    const AttendedSpans span = Attended(p, position);
    const bool hadamard = p.kv_quant == KvQuant::kQ8;
    for (int g = 0; g < G; ++g) {
      const float* qh = q_row + (h0 + g) * hd;
      if (hadamard) {
        for (int64_t d = 0; d < hd; ++d) basis[g][d] = qh[d];
        Hadamard(basis[g], hd);
        qh = basis[g];
      }
      if (span.sink_end > key_begin) {
        ref::RotateQuery(q_row + (h0 + g) * hd, p, span.cache_position - position, c.rope_factors,
                         rotated[g]);
        if (hadamard) Hadamard(rotated[g], hd);
      }
      direct.q[g] = qh;
      sinks.q[g] = rotated[g];
      direct.scores[g] = sinks.scores[g] = scores_all + (h0 + g) * p.cache_slots;
    }
  }
  GroupPass(const GroupPass&) = delete;
  GroupPass& operator=(const GroupPass&) = delete;
};

// A run of the keys a query attends, with where its scores start in score order.
struct Piece {
  SlotRun run;
  int64_t at;
  bool sinks;  // scored with the query turned to its position inside the cache
};

// What a query at `position` attends (RunsOf, in score order) cut to the keys [key_begin,
// key_end) of that order: all of them, or a part's (attention_split.h).
struct Pieces {
  Piece piece[3];
  int n = 0;
  void Add(SlotRun run, int64_t at, bool sinks, int64_t key_begin, int64_t key_end) {
    const int64_t begin = at > key_begin ? at : key_begin;
    const int64_t end = at + run.count < key_end ? at + run.count : key_end;
    if (begin < end) piece[n++] = {{run.slot + begin - at, end - begin}, begin, sinks};
  }
};

inline Pieces PiecesOf(const OpParams& p, int64_t position, int64_t key_begin, int64_t key_end) {
  const AttendedRuns runs = RunsOf(p, Attended(p, position), position);
  Pieces pieces;
  pieces.Add(runs.sinks, 0, true, key_begin, key_end);
  int64_t at = runs.sinks.count;
  for (int r = 0; r < runs.n_recent; ++r) {
    pieces.Add(runs.recent[r], at, false, key_begin, key_end);
    at += runs.recent[r].count;
  }
  return pieces;
}

// Calls attend(h, n) for each pass of a grouped kernel over heads [head_begin, head_end): the
// heads from h that share its KV head, at most `most` of them.
template <class Attend>
inline void ForEachPass(const OpParams& p, int64_t head_begin, int64_t head_end, int64_t most,
                        Attend attend) {
  const int64_t group = p.n_heads / p.n_kv_heads;
  for (int64_t h = head_begin; h < head_end;) {
    const int64_t group_end = (h / group + 1) * group;
    int64_t n = (group_end < head_end ? group_end : head_end) - h;
    n = n < most ? n : most;
    attend(h, n);
    h += n;
  }
}

// Calls attend(std::integral_constant<int, G>{}) with G = n, the heads of a pass (1 to 4), so
// that a kernel instantiates its pass per group size.
template <class Attend>
inline void WithGroupSize(int64_t n, Attend attend) {
  switch (n) {
    case 4:
      return attend(std::integral_constant<int, 4>{});
    case 3:
      return attend(std::integral_constant<int, 3>{});
    case 2:
      return attend(std::integral_constant<int, 2>{});
    default:
      return attend(std::integral_constant<int, 1>{});
  }
}

// A grouped kernel's heads [head_begin, head_end) of one query row, instantiated per KvKind.
using AttendRowFn = void (*)(const float* q_row, int64_t position, const ref::KvCacheView& c,
                             int64_t head_begin, int64_t head_end, float* scores_all,
                             float* out_row);
// Its part over keys [key_begin, key_end) (AttentionPartFn's contract, attention_split.h).
using AttendPartFn = void (*)(const float* q_row, int64_t position, const ref::KvCacheView& c,
                              int64_t head_begin, int64_t head_end, int64_t key_begin,
                              int64_t key_end, float* scores_all, float* parts,
                              int64_t head_stride);

// The entry points of a grouped kernel (AVX2, AVX-512) around its passes. Kernel provides
//   static constexpr int64_t kMaxGroup (heads a pass serves, at most 4) and, per KvKind K and
//   G = 1 … kMaxGroup, the functions
//   Group<K, G>(q_row, position, c, h0, scores_all, out_row)
//   Part<K, G>(q_row, position, c, h0, scores_all, key_begin, key_end, parts, head_stride)
// computing query heads [h0, h0 + G) (one KV head's) over all the keys a row attends, or over a
// range of them as their parts.
template <class Kernel, KvKind K>
void AttendHeadsOfRow(const float* q_row, int64_t position, const ref::KvCacheView& c,
                      int64_t head_begin, int64_t head_end, float* scores_all, float* out_row) {
  ForEachPass(c.params, head_begin, head_end, Kernel::kMaxGroup, [&](int64_t h, int64_t n) {
    WithGroupSize(n, [&](auto g) {
      Kernel::template Group<K, g.value>(q_row, position, c, h, scores_all, out_row);
    });
  });
}
template <class Kernel, KvKind K>
void AttendPartOfRow(const float* q_row, int64_t position, const ref::KvCacheView& c,
                     int64_t head_begin, int64_t head_end, int64_t key_begin, int64_t key_end,
                     float* scores_all, float* parts, int64_t head_stride) {
  ForEachPass(c.params, head_begin, head_end, Kernel::kMaxGroup, [&](int64_t h, int64_t n) {
    float* first = parts + (h - head_begin) * head_stride;
    WithGroupSize(n, [&](auto g) {
      Kernel::template Part<K, g.value>(q_row, position, c, h, scores_all, key_begin, key_end,
                                        first, head_stride);
    });
  });
}

// The instantiation of `by_kind` ({f16, f32, q8}) for a cache of `type` (F16, F32 or int8).
template <class Fn>
Fn ForCacheType(DType type, const Fn (&by_kind)[3]) {
  return by_kind[type == DType::kF16 ? 0 : (type == DType::kF32 ? 1 : 2)];
}

// ref::Attention's contract for f16, f32 and q8 caches, row by row through Kernel's passes.
template <class Kernel>
void AttendRows(const float* q, int64_t rows, int32_t first_position, const ref::KvCacheView& cache,
                float* scores, float* out, int64_t head_begin, int64_t head_end) {
  static constexpr AttendRowFn kByKind[] = {AttendHeadsOfRow<Kernel, KvKind::kF16>,
                                            AttendHeadsOfRow<Kernel, KvKind::kF32>,
                                            AttendHeadsOfRow<Kernel, KvKind::kI8>};
  const AttendRowFn attend = ForCacheType(cache.type, kByKind);
  const int64_t width = int64_t{cache.params.n_heads} * cache.params.head_dim;
  for (int64_t r = 0; r < rows; ++r) {
    attend(q + r * width, first_position + r, cache, head_begin, head_end, scores, out + r * width);
  }
}

// AttentionPartFn's contract (attention_split.h) through Kernel's parts.
template <class Kernel>
void AttendPart(const float* q_row, int64_t position, const ref::KvCacheView& cache, float* scores,
                int64_t head_begin, int64_t head_end, int64_t key_begin, int64_t key_end,
                float* parts, int64_t head_stride) {
  static constexpr AttendPartFn kByKind[] = {AttendPartOfRow<Kernel, KvKind::kF16>,
                                             AttendPartOfRow<Kernel, KvKind::kF32>,
                                             AttendPartOfRow<Kernel, KvKind::kI8>};
  ForCacheType(cache.type, kByKind)(q_row, position, cache, head_begin, head_end, key_begin,
                                    key_end, scores, parts, head_stride);
}

// One query row of one head: q (head_dim), its position, the layer's parameters, its KV head's
// keys and values, its scores scratch, its output (head_dim).
// rope_factors: a sink cache's (ref::KvCacheView::rope_factors), or null.
using AttendOneFn = void (*)(const float* q, int64_t position, const OpParams& p,
                             const float* rope_factors, const KvRows& k, const KvRows& v,
                             float* scores, float* out);

// ref::Attention's contract, each (row, head) by `attend`; q4 caches go to ref::Attention (the
// callers route them to their q4 kernels first).
inline void AttendHeads(AttendOneFn attend, const float* q, int64_t rows, int32_t first_position,
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
    const int64_t first_row = h / group * p.cache_slots;
    const KvRows k{cache.type, cache.k + first_row * hd * elem,
                   cache.k_side != nullptr ? cache.k_side + first_row : nullptr};
    const KvRows v{cache.type, cache.v + first_row * hd * elem,
                   cache.v_side != nullptr ? cache.v_side + first_row : nullptr};
    for (int64_t r = 0; r < rows; ++r) {
      attend(q + (r * p.n_heads + h) * hd, first_position + r, p, cache.rope_factors, k, v,
             scores_all + h * p.cache_slots, out + (r * p.n_heads + h) * hd);
    }
  }
}

}  // namespace staticlm::cpu
