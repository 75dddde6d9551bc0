#include "platform/stitched_map.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace staticlm {

StitchedMap::~StitchedMap() {
  Close();
}

StitchedMap::StitchedMap(StitchedMap&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

StitchedMap& StitchedMap::operator=(StitchedMap&& other) noexcept {
  if (this != &other) {
    Close();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

size_t StitchedMap::PageBytes() {
  return static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

Status StitchedMap::Reserve(size_t bytes) {
  Close();
  if (bytes == 0) bytes = PageBytes();
  void* p = ::mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    return Status::Error(StatusCode::kOutOfMemory, "cannot reserve %zu bytes of address space: %s",
                         bytes, std::strerror(errno));
  }
  data_ = static_cast<uint8_t*>(p);
  size_ = bytes;
  return Status::Ok();
}

Status StitchedMap::MapFile(const char* path, size_t offset, size_t size) {
  if (offset % PageBytes() != 0 || offset > size_ || size > size_ - offset) {
    return Status::Error(StatusCode::kInternal, "%s does not fit its reserved place", path);
  }
  if (size == 0) return Status::Ok();
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Status::Error(StatusCode::kIoError, "cannot open %s: %s", path, std::strerror(errno));
  }
  void* p = ::mmap(data_ + offset, size, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
  int err = errno;
  ::close(fd);
  if (p == MAP_FAILED) {
    return Status::Error(StatusCode::kIoError, "cannot map %s: %s", path, std::strerror(err));
  }
  return Status::Ok();
}

Status StitchedMap::MapAnonymous(size_t offset, size_t bytes) {
  if (bytes == 0) return Status::Ok();
  if (offset % PageBytes() != 0 || offset > size_ || bytes > size_ - offset) {
    return Status::Error(StatusCode::kInternal, "anonymous tail does not fit its reserved place");
  }
  void* p = ::mmap(data_ + offset, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  if (p == MAP_FAILED) {
    return Status::Error(StatusCode::kOutOfMemory, "cannot map %zu bytes: %s", bytes,
                         std::strerror(errno));
  }
  return Status::Ok();
}

Status StitchedMap::Seal(size_t offset, size_t bytes) {
  if (bytes == 0) return Status::Ok();
  if (::mprotect(data_ + offset, bytes, PROT_READ) != 0) {
    return Status::Error(StatusCode::kInternal, "cannot make the tail read-only: %s",
                         std::strerror(errno));
  }
  return Status::Ok();
}

Status StitchedMap::Release(size_t offset, size_t bytes) {
  if (bytes == 0) return Status::Ok();
  void* p = ::mmap(data_ + offset, bytes, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    return Status::Error(StatusCode::kInternal, "cannot release %zu bytes: %s", bytes,
                         std::strerror(errno));
  }
  return Status::Ok();
}

void StitchedMap::Close() {
  if (data_ != nullptr) ::munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace staticlm
