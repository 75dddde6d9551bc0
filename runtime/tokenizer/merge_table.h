// MergeTable: the BPE merge rules, looked up by the ids of the two adjacent tokens.
// Open addressing over one array sized at init (load factor <= 1/2); lookups are run-phase
// safe (no allocation, a few probes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "platform/status.h"

namespace staticlm::text {

class MergeTable {
 public:
  // Init only: sizes the table for `max_merges` rules. Allocates.
  Status Init(size_t max_merges);

  // Init only. Adds the rule (left, right) -> merged with priority `rank` (lower merges
  // first). A pair that is already present keeps its first rule and Insert returns false.
  bool Insert(int32_t left, int32_t right, int32_t rank, int32_t merged);

  // Finds the rule for (left, right); false when the pair never merges.
  bool Find(int32_t left, int32_t right, int32_t* rank, int32_t* merged) const;

  size_t size() const { return size_; }
  size_t bytes() const { return slots_.capacity() * sizeof(Slot); }

 private:
  struct Slot {
    uint64_t key;  // kEmpty or (left << 32 | right)
    int32_t rank;
    int32_t merged;
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};

  size_t SlotFor(uint64_t key) const;

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
  size_t max_size_ = 0;
};

}  // namespace staticlm::text
