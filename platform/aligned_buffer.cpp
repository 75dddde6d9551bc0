#include "platform/aligned_buffer.h"

#include "platform/huge_pages.h"

#include <cstdlib>
#include <cstring>
#include <utility>

namespace staticlm {

AlignedBuffer::~AlignedBuffer() {
  Release();
}

AlignedBuffer::AlignedBuffer(AlignedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, false)) {}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, false);
  }
  return *this;
}

Status AlignedBuffer::Allocate(size_t bytes, size_t alignment, const char* what, Pages pages) {
  Release();
  if (bytes == 0) return Status::Ok();
  // Huge pages come from a mapping of their own (MapHugePages says why), whole pages of it;
  // where the system gives none, normal pages as for kNormal.
  const size_t huge = QueryHugePages().page_bytes;
  const bool use_huge =
      pages == Pages::kHugeWherePossible && huge > 0 && bytes >= huge && alignment <= huge;
  const size_t unit = use_huge ? huge : alignment;
  const size_t rounded = (bytes + unit - 1) / unit * unit;
  if (rounded < bytes) {
    return Status::Error(StatusCode::kOutOfMemory, "%s: size %zu overflows", what, bytes);
  }
  void* p = use_huge ? MapHugePages(rounded) : nullptr;
  mapped_ = p != nullptr;
  size_t size = rounded;
  if (!mapped_) {
    size = (bytes + alignment - 1) / alignment * alignment;  // ≤ rounded: cannot overflow
    p = std::aligned_alloc(alignment, size);
  }
  if (p == nullptr) {
    return Status::Error(StatusCode::kOutOfMemory, "cannot allocate %zu bytes for %s", size, what);
  }
  std::memset(p, 0, size);  // faults every page in now, not in the run phase
  data_ = static_cast<uint8_t*>(p);
  size_ = size;
  return Status::Ok();
}

void AlignedBuffer::Release() {
  if (mapped_) {
    UnmapHugePages(data_, size_);
  } else {
    std::free(data_);
  }
  data_ = nullptr;
  size_ = 0;
  mapped_ = false;
}

}  // namespace staticlm
