// StitchedMap: several files mapped read-only one after another in one reserved range of
// address space, followed by a writable anonymous tail, so that tensors spread over a
// sharded model (Hugging Face safetensors shards) and tensors made at init lie in one
// contiguous buffer the backends bind as they bind a GGUF file's data section. Nothing is
// copied: each file's pages come from the page cache as a plain mapping's do.
#pragma once

#include <cstddef>
#include <cstdint>

#include "platform/status.h"

namespace staticlm {

class StitchedMap {
 public:
  StitchedMap() = default;
  ~StitchedMap();
  StitchedMap(StitchedMap&& other) noexcept;
  StitchedMap& operator=(StitchedMap&& other) noexcept;
  StitchedMap(const StitchedMap&) = delete;
  StitchedMap& operator=(const StitchedMap&) = delete;

  static size_t PageBytes();

  // Init: reserves `bytes` (a multiple of PageBytes()) of address space, inaccessible.
  Status Reserve(size_t bytes);
  // Init: maps file `path` (`size` bytes, as the caller found it) read-only at `offset` (a
  // multiple of PageBytes()) inside the reservation.
  Status MapFile(const char* path, size_t offset, size_t size);
  // Init: makes [offset, offset + bytes) anonymous, zeroed and writable (the tail).
  Status MapAnonymous(size_t offset, size_t bytes);
  // Init: makes [offset, offset + bytes) read-only (the tail once written).
  Status Seal(size_t offset, size_t bytes);
  // Init: gives back [offset, offset + bytes) (pages no longer needed), leaving it reserved.
  Status Release(size_t offset, size_t bytes);
  void Close();

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace staticlm
