#include "runtime/session/snapshot_slots.h"

namespace staticlm {
namespace {

uint64_t RoundUp64(uint64_t b) {
  return (b + 63) & ~uint64_t{63};
}

}  // namespace

uint64_t SnapshotSlots::SlotBytes(uint64_t kv_bytes, int32_t history_capacity, int32_t vocab) {
  return RoundUp64(kv_bytes) + RoundUp64(uint64_t(history_capacity) * sizeof(int32_t)) +
         RoundUp64(uint64_t(vocab) * sizeof(float));
}

Status SnapshotSlots::Allocate(int32_t count, uint64_t kv_bytes, int32_t history_capacity,
                               int32_t vocab) {
  if (count < 0 || count > kMaxSlots) {
    return Status::Error(StatusCode::kInvalidArgument, "max_snapshots %d is outside 0..%d", count,
                         kMaxSlots);
  }
  count_ = 0;
  if (count == 0) return Status::Ok();
  uint64_t slot_bytes = SlotBytes(kv_bytes, history_capacity, vocab);
  STATICLM_RETURN_IF_ERROR(
      memory_.Allocate(static_cast<size_t>(slot_bytes * uint64_t(count)), 64, "snapshot slots"));
  for (int32_t i = 0; i < count; ++i) {
    uint8_t* base = memory_.data() + slot_bytes * uint64_t(i);
    Snapshot& s = slots_[i];
    s = Snapshot();
    s.kv = base;
    s.history = reinterpret_cast<int32_t*>(base + RoundUp64(kv_bytes));
    s.logits = reinterpret_cast<float*>(base + RoundUp64(kv_bytes) +
                                        RoundUp64(uint64_t(history_capacity) * sizeof(int32_t)));
  }
  count_ = count;
  return Status::Ok();
}

}  // namespace staticlm
