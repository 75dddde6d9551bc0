// AtomicFile: writes a file so that `path` always holds either its old contents or the complete
// new ones, never a half-written file (a crash or an error mid-write leaves the old file).
//
// The bytes go to a temporary file beside `path` (same directory, so the rename stays on one
// file system); Commit flushes them to disk (fsync), renames the temporary over `path` and
// syncs the directory. Abort, or destroying an uncommitted AtomicFile, removes the temporary.
// Plain POSIX calls on a descriptor and buffers inside the object: no heap allocation, so it
// may run after init (session files).
#pragma once

#include <cstddef>
#include <cstdint>

#include "platform/status.h"

namespace staticlm {

class AtomicFile {
 public:
  AtomicFile() = default;
  ~AtomicFile() { Abort(); }
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Creates the temporary file for `path` (borrowed for the call). kIoError if it cannot.
  Status Open(const char* path);
  // Appends `bytes` bytes; kIoError on a short or failed write (e.g. the disk is full).
  Status Write(const void* data, size_t bytes);
  // Overwrites bytes already written at `offset` (e.g. a header whose checksum is known last).
  Status WriteAt(uint64_t offset, const void* data, size_t bytes);
  // Syncs, closes and renames the temporary over the path. On failure the temporary is removed
  // and the old file (if any) is untouched.
  Status Commit();
  // Removes the temporary file, if one is open. Safe to call at any time.
  void Abort();

 private:
  int fd_ = -1;
  char path_[4096] = {0};
  char temp_[4096 + 32] = {0};
};

// Writes `bytes` bytes of `data` to `path` atomically (AtomicFile in one call).
Status WriteFileAtomically(const char* path, const void* data, size_t bytes);

}  // namespace staticlm
