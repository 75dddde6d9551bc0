// SnapshotSlots: host memory, allocated once at init, holding copies of a conversation (the
// KV cache bytes a CacheRegions names, the token history, the last logits, the position and the
// detokenizer's held bytes) so it can be restored without prefilling again: a shared system
// prompt snapshotted once and restored for every new conversation.
#pragma once

#include <cstddef>
#include <cstdint>

#include "platform/aligned_buffer.h"
#include "platform/status.h"

namespace staticlm {

struct Snapshot {
  uint8_t* kv = nullptr;       // (kv_bytes) the cache regions, packed in CacheRegions order
  int32_t* history = nullptr;  // (history_capacity) tokens
  float* logits = nullptr;     // (vocab) the logits of the last token
  bool used = false;           // holds a conversation
  int32_t position = 0;
  bool have_logits = false;
  uint8_t pending[4] = {0, 0, 0, 0};  // detokenizer held bytes
  uint32_t n_pending = 0;
};

class SnapshotSlots {
 public:
  static constexpr int32_t kMaxSlots = 64;

  // Bytes one slot takes (each part rounded up to 64 bytes).
  static uint64_t SlotBytes(uint64_t kv_bytes, int32_t history_capacity, int32_t vocab);

  // Init only: allocates `count` slots (0 allocates nothing).
  Status Allocate(int32_t count, uint64_t kv_bytes, int32_t history_capacity, int32_t vocab);

  int32_t count() const { return count_; }
  // Slot `i`, or null when out of range. Run phase.
  Snapshot* slot(int32_t i) { return i >= 0 && i < count_ ? &slots_[i] : nullptr; }
  uint64_t bytes() const { return memory_.size(); }

 private:
  AlignedBuffer memory_;
  Snapshot slots_[kMaxSlots];
  int32_t count_ = 0;
};

}  // namespace staticlm
