#include "runtime/tokenizer/merge_table.h"

namespace staticlm::text {

namespace {

uint64_t PairKey(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

}  // namespace

Status MergeTable::Init(size_t max_merges) {
  size_t capacity = 16;
  while (capacity < 2 * max_merges) capacity *= 2;
  slots_.assign(capacity, Slot{kEmpty, 0, 0});
  mask_ = capacity - 1;
  size_ = 0;
  max_size_ = max_merges;
  return Status::Ok();
}

// Linear probing from a multiplicative hash; the table is never full, so this ends.
size_t MergeTable::SlotFor(uint64_t key) const {
  size_t i = static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 32) & mask_;
  while (slots_[i].key != kEmpty && slots_[i].key != key) i = (i + 1) & mask_;
  return i;
}

bool MergeTable::Insert(int32_t left, int32_t right, int32_t rank, int32_t merged) {
  if (slots_.empty() || size_ >= max_size_) return false;
  const uint64_t key = PairKey(left, right);
  Slot& slot = slots_[SlotFor(key)];
  if (slot.key == key) return false;
  slot = Slot{key, rank, merged};
  ++size_;
  return true;
}

bool MergeTable::Find(int32_t left, int32_t right, int32_t* rank, int32_t* merged) const {
  if (slots_.empty()) return false;
  const uint64_t key = PairKey(left, right);
  const Slot& slot = slots_[SlotFor(key)];
  if (slot.key != key) return false;
  *rank = slot.rank;
  *merged = slot.merged;
  return true;
}

}  // namespace staticlm::text
