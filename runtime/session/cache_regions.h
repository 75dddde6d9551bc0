// CacheRegions: which bytes of the KV cache buffer hold a conversation, so snapshots and session
// files copy only those.
//
// Under the static policy each plan tensor blk.N.cache_k / cache_v is [kv_heads, capacity,
// head_dim] and position p lives in slot p of every head row, so a conversation of p tokens is
// the first p slots of each row: p · head_dim elements at the start of each row. Under any other
// policy (a ring, sinks, quantized keys with scales beside them), or for a cache this class does
// not recognise, the conversation is the whole buffer. Built at init; never allocates.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/plan.h"
#include "platform/status.h"

namespace staticlm {

struct KvRegion {
  uint64_t offset = 0;  // bytes from the start of the KV cache buffer
  uint64_t bytes = 0;
};

class CacheRegions {
 public:
  // Tensors a prefix layout can describe; a plan with more falls back to the whole buffer.
  static constexpr int kMaxTensors = 512;

  // Init. `static_policy`: the cache is the static one (slot = position), so a prefix layout
  // may be used if the plan's KV tensors have the expected shape. `kv_bytes`: the buffer size.
  void Init(const Plan& plan, uint64_t kv_bytes, bool static_policy);

  // True when a conversation is the first `position` slots of each head row.
  bool prefix() const { return n_tensors_ > 0; }
  // Bytes a conversation at `position` occupies (the whole buffer without a prefix layout).
  uint64_t StoredBytes(int64_t position) const;
  // The regions, in a fixed order: region i of a conversation at `position`.
  size_t RegionCount() const;
  KvRegion Region(size_t i, int64_t position) const;
  int64_t capacity() const { return capacity_; }

 private:
  struct Tensor {
    uint64_t offset;     // of head row 0
    uint64_t row_bytes;  // capacity slots
    uint64_t slot_bytes;
    int64_t heads;
  };
  bool AddTensor(const TensorRegion& t, int64_t capacity);

  Tensor tensors_[kMaxTensors] = {};
  int n_tensors_ = 0;
  int64_t heads_total_ = 0;  // head rows over all tensors
  uint64_t slot_bytes_ = 0;  // bytes of one slot of one row (the same for every tensor)
  int64_t capacity_ = 0;     // slots per row
  uint64_t kv_bytes_ = 0;
};

}  // namespace staticlm
