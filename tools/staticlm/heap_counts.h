// What the CLI reports about heap events after init: staticlm's own (which must be 0) and the
// device driver's (lavapipe allocates inside vkQueueSubmit and on its threads), read from
// platform/alloc_counter after Stop(). Each is -1 where counting is unavailable (sanitizer
// builds).
#pragma once

#include <cstdio>

#include "platform/alloc_counter.h"

namespace staticlm::cli {

struct HeapCounts {
  long long own = -1;     // heap_allocs_after_init
  long long driver = -1;  // driver_heap_allocs_after_init
};

inline HeapCounts ReadHeapCounts() {
  if (!alloc_counter::Available()) return {};
  return {static_cast<long long>(alloc_counter::Events()),
          static_cast<long long>(alloc_counter::DriverEvents())};
}

// " heap_allocs_after_init=N driver_heap_allocs_after_init=M" ("unavailable" for -1).
inline void PrintHeapCounts(FILE* out, const HeapCounts& h) {
  if (h.own < 0) {
    std::fputs(" heap_allocs_after_init=unavailable driver_heap_allocs_after_init=unavailable",
               out);
    return;
  }
  std::fprintf(out, " heap_allocs_after_init=%lld driver_heap_allocs_after_init=%lld", h.own,
               h.driver);
}

// ", \"heap_allocs_after_init\": N, \"driver_heap_allocs_after_init\": M" (null for -1).
inline void PrintHeapCountsJson(FILE* out, const HeapCounts& h) {
  if (h.own < 0) {
    std::fputs(", \"heap_allocs_after_init\": null, \"driver_heap_allocs_after_init\": null", out);
    return;
  }
  std::fprintf(out, ", \"heap_allocs_after_init\": %lld, \"driver_heap_allocs_after_init\": %lld",
               h.own, h.driver);
}

}  // namespace staticlm::cli
