// What the SIMD attention kernels (fast_attention.cpp for AVX2, fast_attention_neon.cpp for
// arm64) share: how they walk a cache — the slots of consecutive positions under the layer's
// policy, without a division per key — and the loop over heads and rows around the per-ISA
// work on one (row, head).
#pragma once

#include <cstdint>

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
