// The header of a safetensors file (Hugging Face's weight format): an 8-byte little-endian
// length N, N bytes of JSON mapping each tensor name to {dtype, shape, data_offsets}, then the
// data. The file is untrusted: every length, offset, shape and type is checked before a tensor
// is exposed, and tensors may not overlap. Init only (allocates).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "contract/dtype.h"
#include "platform/status.h"

namespace staticlm::hf {

struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::kF32;        // F32, F16 or BF16
  uint32_t n_dims = 0;              // 0 … 4
  int64_t shape[4] = {1, 1, 1, 1};  // as written: outermost first
  uint64_t begin = 0;               // from the start of the data (after the header)
  uint64_t end = 0;

  int64_t elements() const { return shape[0] * shape[1] * shape[2] * shape[3]; }
};

struct SafetensorsHeader {
  uint64_t data_start = 0;                // 8 + N: where offsets count from in the file
  std::vector<SafetensorsEntry> tensors;  // sorted by begin
};

// Larger headers are refused (the reference implementation's limit).
constexpr uint64_t kMaxSafetensorsHeaderBytes = 100u << 20;

// Parses the header of the file whose bytes are [data, data + size). Errors are kFormatError
// (kUnsupported for a dtype other than F32, F16, BF16), one line starting with `file`.
Status ParseSafetensorsHeader(const uint8_t* data, uint64_t size, const char* file,
                              SafetensorsHeader* out);

}  // namespace staticlm::hf
