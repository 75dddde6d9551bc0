// BufferAccess: the host's way into the buffers a backend may keep in its own memory (the KV
// cache and the arena may live on a device). One concern of Backend, apart so that code that
// only moves cache bytes (snapshots, session files) depends on this alone.
#pragma once

#include <cstdint>

#include "contract/plan.h"
#include "platform/status.h"

namespace staticlm {

class BufferAccess {
 public:
  virtual ~BufferAccess() = default;
  // Run phase: copy `bytes` at `offset` of buffer `id` (kKvCache or kIo) to or from host
  // memory, e.g. to snapshot or restore the cache. Bounds are checked; no allocation.
  virtual Status ReadBuffer(BufferId id, uint64_t offset, uint64_t bytes, void* dst) = 0;
  virtual Status WriteBuffer(BufferId id, uint64_t offset, uint64_t bytes, const void* src) = 0;
  // Run phase: copy `bytes` within buffer `id` from `src_offset` to `dst_offset` (the regions
  // do not overlap), without passing through the host.
  virtual Status CopyWithinBuffer(BufferId id, uint64_t src_offset, uint64_t dst_offset,
                                  uint64_t bytes) = 0;
};

}  // namespace staticlm
