// SessionStore: what an Engine holds for snapshots and session files, sized at init: the KV
// layout of a conversation, the snapshot slots, and a staging buffer through which session
// files stream to and from the cache (which may live in device memory).
#pragma once

#include <cstddef>
#include <cstdint>

#include "platform/aligned_buffer.h"
#include "runtime/session/cache_regions.h"
#include "runtime/session/snapshot_slots.h"

namespace staticlm {

struct SessionStore {
  static constexpr size_t kStagingBytes = size_t{256} << 10;

  // Host bytes for `max_snapshots` slots and the staging buffer.
  static uint64_t Bytes(int32_t max_snapshots, uint64_t kv_bytes, int32_t history_capacity,
                        int32_t vocab) {
    return uint64_t(max_snapshots > 0 ? max_snapshots : 0) *
               SnapshotSlots::SlotBytes(kv_bytes, history_capacity, vocab) +
           kStagingBytes;
  }

  CacheRegions cache_regions;
  SnapshotSlots snapshots;
  AlignedBuffer staging;
  uint64_t plan_hash = 0;  // of every plan, in order (the model's fingerprint: Model)
};

}  // namespace staticlm
