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
  // Huge pages come from a mapping of their own (MapHugePages says why), whole pages of it.
  const size_t huge = QueryHugePages().page_bytes;
  if (pages == Pages::kHugeWherePossible && huge > 0 && bytes >= huge && alignment <= huge) {
    const size_t rounded = (bytes + huge - 1) / huge * huge;
    if (rounded >= bytes) {
      data_ = static_cast<uint8_t*>(MapHugePages(rounded));
      if (data_ != nullptr) {
        mapped_ = true;
        size_ = rounded;
        std::memset(data_, 0, rounded);  // faults every page in now, not in the run phase
        return Status::Ok();
      }
    }  // else normal pages, as where the system has no huge pages
  }
  size_t rounded = (bytes + alignment - 1) / alignment * alignment;
  if (rounded < bytes) {
    return Status::Error(StatusCode::kOutOfMemory, "%s: size %zu overflows", what, bytes);
  }
  void* p = std::aligned_alloc(alignment, rounded);
  if (p == nullptr) {
    return Status::Error(StatusCode::kOutOfMemory, "cannot allocate %zu bytes for %s", rounded,
                         what);
  }
  std::memset(p, 0, rounded);
  data_ = static_cast<uint8_t*>(p);
  size_ = rounded;
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
