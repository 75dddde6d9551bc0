// AlignedBuffer: one aligned, zeroed block owned for the lifetime of the object. Allocated
// only at init; moving transfers ownership, the destructor frees.
#pragma once

#include <cstddef>
#include <cstdint>

#include "platform/status.h"

namespace staticlm {

// Which pages back a buffer: normal ones, or huge pages where the system allows them
// (platform/huge_pages.h; the buffer is then aligned and sized to whole huge pages when it is at
// least one huge page large, and otherwise allocated as kNormal).
enum class Pages { kNormal, kHugeWherePossible };

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  ~AlignedBuffer();
  AlignedBuffer(AlignedBuffer&& other) noexcept;
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  // Init only: allocates `bytes` (rounded up to `alignment`, a power of two) and zeroes them,
  // so every page is touched once here and never faults in the run phase.
  Status Allocate(size_t bytes, size_t alignment, const char* what, Pages pages = Pages::kNormal);
  void Release();

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool on_huge_pages() const { return mapped_; }  // asked for and given a huge-page mapping

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;  // from MapHugePages, not the heap
};

}  // namespace staticlm
