#include "platform/aligned_buffer.h"

#include <cstdlib>
#include <cstring>
#include <utility>

namespace staticlm {

AlignedBuffer::~AlignedBuffer() {
  Release();
}

AlignedBuffer::AlignedBuffer(AlignedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

Status AlignedBuffer::Allocate(size_t bytes, size_t alignment, const char* what) {
  Release();
  if (bytes == 0) return Status::Ok();
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
  std::free(data_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace staticlm
