#include "platform/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace staticlm {
namespace {

// Makes the rename itself durable: without syncing the directory, a crash just after rename
// could leave the old entry. Failure here is not reported: the data is already safe.
void SyncDirectoryOf(const char* path) {
  char dir[4096];
  const char* slash = std::strrchr(path, '/');
  if (slash == nullptr) {
    std::snprintf(dir, sizeof(dir), ".");
  } else if (slash == path) {
    std::snprintf(dir, sizeof(dir), "/");
  } else {
    std::snprintf(dir, sizeof(dir), "%.*s", static_cast<int>(slash - path), path);
  }
  int fd = ::open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

}  // namespace

Status AtomicFile::Open(const char* path) {
  Abort();
  if (path == nullptr || path[0] == '\0') {
    return Status::Error(StatusCode::kInvalidArgument, "no file path given");
  }
  size_t n = std::strlen(path);
  if (n >= sizeof(path_)) {
    return Status::Error(StatusCode::kInvalidArgument, "file path is too long (%zu bytes)", n);
  }
  std::memcpy(path_, path, n + 1);
  std::snprintf(temp_, sizeof(temp_), "%s.tmp%d", path, static_cast<int>(::getpid()));
  fd_ = ::open(temp_, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    return Status::Error(StatusCode::kIoError, "cannot write %s: %s", path, std::strerror(errno));
  }
  return Status::Ok();
}

Status AtomicFile::Write(const void* data, size_t bytes) {
  if (fd_ < 0) return Status::Error(StatusCode::kInvalidState, "file is not open");
  const uint8_t* p = static_cast<const uint8_t*>(data);
  while (bytes > 0) {
    ssize_t n = ::write(fd_, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return Status::Error(StatusCode::kIoError, "cannot write %s: %s", path_,
                           n < 0 ? std::strerror(errno) : "short write");
    }
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status AtomicFile::WriteAt(uint64_t offset, const void* data, size_t bytes) {
  if (fd_ < 0) return Status::Error(StatusCode::kInvalidState, "file is not open");
  const uint8_t* p = static_cast<const uint8_t*>(data);
  while (bytes > 0) {
    ssize_t n = ::pwrite(fd_, p, bytes, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return Status::Error(StatusCode::kIoError, "cannot write %s: %s", path_,
                           n < 0 ? std::strerror(errno) : "short write");
    }
    p += n;
    offset += static_cast<uint64_t>(n);
    bytes -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status AtomicFile::Commit() {
  if (fd_ < 0) return Status::Error(StatusCode::kInvalidState, "file is not open");
  bool synced = ::fsync(fd_) == 0;
  int sync_errno = errno;
  bool closed = ::close(fd_) == 0;
  fd_ = -1;
  if (!synced || !closed) {
    ::unlink(temp_);
    return Status::Error(StatusCode::kIoError, "cannot write %s: %s", path_,
                         std::strerror(synced ? errno : sync_errno));
  }
  if (::rename(temp_, path_) != 0) {
    int rename_errno = errno;
    ::unlink(temp_);
    return Status::Error(StatusCode::kIoError, "cannot replace %s: %s", path_,
                         std::strerror(rename_errno));
  }
  SyncDirectoryOf(path_);
  return Status::Ok();
}

void AtomicFile::Abort() {
  if (fd_ < 0) return;
  ::close(fd_);
  fd_ = -1;
  ::unlink(temp_);
}

Status WriteFileAtomically(const char* path, const void* data, size_t bytes) {
  AtomicFile file;
  STATICLM_RETURN_IF_ERROR(file.Open(path));
  STATICLM_RETURN_IF_ERROR(file.Write(data, bytes));
  return file.Commit();
}

}  // namespace staticlm
