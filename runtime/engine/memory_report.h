// MemoryReport: every byte a context allocates at init, by buffer, known once the plans are
// built (before anything is allocated: staticlm inspect). Program fills the buffers the plans
// size; the Engine adds the host memory of the sequences, tokenizer, sampler and snapshots.
#pragma once

#include <cstdint>

#include "runtime/plan/memory_planner.h"

namespace staticlm {

struct MemoryReport {
  uint64_t weights_bytes = 0;
  uint64_t kv_cache_bytes = 0;
  uint64_t arena_bytes = 0;
  uint64_t io_bytes = 0;
  uint64_t host_bytes = 0;
  // Weights the backend copies into its own layout at init (CPU: packed Q8_0 matrices for int8
  // activations, backends/cpu/packed_weights.h); the file stays mapped beside them.
  uint64_t packed_weights_bytes = 0;
  uint64_t snapshot_bytes = 0;  // snapshot slots and the session file staging buffer
  uint64_t total_bytes = 0;
  uint64_t kv_ring_bytes = 0;        // kv_cache_bytes of the layers with a ring cache
  uint64_t kv_global_bytes = 0;      // … and of those that keep the whole context
  uint64_t kv_all_global_bytes = 0;  // the KV cache with every layer global (StaticCache)
  ArenaReport arena;
};

}  // namespace staticlm
