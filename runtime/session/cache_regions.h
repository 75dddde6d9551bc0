// CacheRegions: which bytes of the KV cache buffer hold one sequence's conversation, so
// snapshots and session files copy only those.
//
// Every cache tensor holds max_batch sequences, sequence s in the s-th of max_batch equal parts
// (contract/plan.h). Under the static policy each blk.N.cache_k / cache_v is [max_batch ·
// kv_heads, capacity, head_dim] and position p lives in slot p of every head row, so a
// conversation of p tokens is the first p slots of each of its sequence's head rows. Under any
// other policy (a ring, sinks, quantized keys with scales beside them), or for a cache this
// class does not recognise, the conversation is its sequence's part of every cache tensor — with
// one sequence, the whole buffer. Built at init; never allocates.
#pragma once

#include <cstddef>
#include <cstdint>

#include "contract/plan.h"
#include "platform/status.h"

namespace staticlm {

struct KvRegion {
  uint64_t offset = 0;  // bytes from the start of the KV cache buffer
  uint64_t bytes = 0;
};

class CacheRegions {
 public:
  // Tensors the class can describe; a plan with more is not supported (Init fails).
  static constexpr int kMaxTensors = 512;

  // Init. `static_policy`: the cache is the static one (slot = position), so a prefix layout
  // may be used if the plan's KV tensors have the expected shape. `kv_bytes`: the buffer size.
  Status Init(const Plan& plan, uint64_t kv_bytes, bool static_policy);

  // True when a conversation is the first `position` slots of each head row.
  bool prefix() const { return prefix_; }
  // Bytes one sequence's conversation at `position` occupies.
  uint64_t StoredBytes(int64_t position) const;
  // The regions of sequence `sequence` (0 … max_batch − 1) at `position`, in a fixed order.
  size_t RegionCount() const;
  KvRegion Region(size_t i, int64_t position, int32_t sequence = 0) const;
  int64_t capacity() const { return capacity_; }

  // Load-time check of `n` bytes that a session file would write at `offset` of the KV cache
  // buffer: every F16/F32 element of a cache tensor (values, and the scales beside quantized
  // ones) in that range must be finite and within ±kMaxCachedMagnitude. A file with valid
  // checksums can still carry such values (crafted, or made by a broken writer); loaded, they
  // would turn every later step's logits into NaN. Elements cut by the range's ends are skipped.
  static constexpr float kMaxCachedMagnitude = 1e8f;
  Status CheckValues(uint64_t offset, const uint8_t* bytes, size_t n) const;

 private:
  struct Tensor {
    uint64_t offset;      // of sequence 0's part
    uint64_t part_bytes;  // one sequence's part
    uint64_t row_bytes;   // prefix layout: capacity slots of one head row
    uint64_t slot_bytes;
    int64_t heads;   // prefix layout: head rows per sequence
    uint64_t bytes;  // the whole tensor (every sequence)
    DType dtype;
  };
  bool AddPrefixTensor(const TensorRegion& t);

  Tensor tensors_[kMaxTensors] = {};
  int n_tensors_ = 0;
  bool prefix_ = false;
  bool whole_ = false;       // one sequence: its region is the whole buffer
  int32_t batch_ = 1;        // sequences
  int64_t heads_total_ = 0;  // prefix layout: head rows per sequence over all tensors
  uint64_t slot_bytes_ = 0;  // bytes of one slot of one row (the same for every tensor)
  int64_t capacity_ = 0;     // slots per row
  uint64_t kv_bytes_ = 0;
};

}  // namespace staticlm
