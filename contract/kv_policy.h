// The arithmetic of the cache policies (DESIGN.md, "KV cache policies"): which slot holds a
// position, and which positions a query attends to. Shared by every backend's kernels so that
// they agree by construction; plain inline functions, checkable by eye.
#pragma once

#include <cstdint>

#include "contract/hd.h"
#include "contract/plan.h"

namespace staticlm {

// The slots before a Sink cache's ring: its sinks' — rounded up to whole groups in a q4 cache,
// whose key groups must each fill an aligned run of slots. Positions sinks … SinkSlots − 1 then
// keep the slots after the sinks' (attended while in the window, never overwritten), and the
// ring starts on a group boundary.
STATICLM_HD inline int64_t SinkSlots(const OpParams& p) {
  const int64_t group = p.kv_group, sinks = p.sinks;
  return group > 0 ? (sinks + group - 1) / group * group : sinks;
}

// The slot of position p (p ≥ 0) in a cache of p.cache_slots slots.
STATICLM_HD inline int64_t KvSlot(const OpParams& p, int64_t position) {
  switch (p.cache_policy) {
    case CachePolicy::kStatic:
      return position;
    case CachePolicy::kSlidingWindow:
      return position % p.cache_slots;
    case CachePolicy::kSink: {
      const int64_t fixed = SinkSlots(p);
      return position < fixed ? position : fixed + (position - fixed) % (p.cache_slots - fixed);
    }
  }
  return 0;
}

// The positions a query at `position` attends to, in order: the sinks 0 … sink_end − 1, then
// begin … position. `cache_position` is where the query sits inside the cache (StreamingLLM):
// the count of attended positions minus one; it equals `position` until something is evicted.
struct AttendedSpans {
  int64_t sink_end = 0;
  int64_t begin = 0;
  int64_t cache_position = 0;
};

STATICLM_HD inline AttendedSpans Attended(const OpParams& p, int64_t position) {
  AttendedSpans a;
  switch (p.cache_policy) {
    case CachePolicy::kStatic:
      a.begin = 0;
      break;
    case CachePolicy::kSlidingWindow:
      a.begin = position - p.window + 1 > 0 ? position - p.window + 1 : 0;
      break;
    case CachePolicy::kSink: {
      a.sink_end = position + 1 < p.sinks ? position + 1 : p.sinks;
      int64_t recent_begin = position - (p.window - p.sinks) + 1;
      a.begin = recent_begin > p.sinks ? recent_begin : p.sinks;
      break;
    }
  }
  int64_t recent = position >= a.begin ? position - a.begin + 1 : 0;
  a.cache_position = a.sink_end + recent - 1;
  return a;
}

// q4: positions below this are read from the quantized cache, the rest from the full-precision
// rings. Only whole groups are quantized, when a step completes them.
STATICLM_HD inline int64_t QuantizedEnd(const OpParams& p, int64_t step_end) {
  return p.kv_group > 0 ? step_end / p.kv_group * p.kv_group : step_end;
}

}  // namespace staticlm
