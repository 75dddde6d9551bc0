// FileMap: a read-only memory mapping of a whole file. The CPU backend uses model weights in
// place from this mapping, so it must outlive every plan and backend that reads them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "platform/status.h"

namespace staticlm {

class FileMap {
 public:
  FileMap() = default;
  ~FileMap();
  FileMap(FileMap&& other) noexcept;
  FileMap& operator=(FileMap&& other) noexcept;
  FileMap(const FileMap&) = delete;
  FileMap& operator=(const FileMap&) = delete;

  // Init only. Maps `path` read-only; an empty file maps to size 0 with a null data pointer.
  Status Open(const char* path);
  void Close();

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace staticlm
