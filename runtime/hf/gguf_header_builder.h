// GgufHeaderBuilder: writes the header of a GGUF file (magic, metadata, tensor infos; no data
// section) into memory, so that a model that did not come as a GGUF file (a Hugging Face
// folder) can be described by the same GgufFile the rest of staticlm reads
// (GgufFile::AdoptHeader). Init only: it allocates.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "contract/dtype.h"

namespace staticlm::hf {

class GgufHeaderBuilder {
 public:
  void AddU32(std::string_view key, uint32_t value);
  void AddF32(std::string_view key, float value);
  void AddBool(std::string_view key, bool value);
  void AddString(std::string_view key, std::string_view value);
  // A tensor of ggml dims `ne` (innermost first, `n_dims` of them) at `offset` in the data
  // section the header will be given.
  void AddTensor(std::string_view name, const int64_t* ne, uint32_t n_dims, DType type,
                 uint64_t offset);

  // The header: version 3, the keys and tensors in the order they were added.
  std::vector<uint8_t> Finish() const;

 private:
  void Key(std::string_view key, uint32_t type);
  void Bytes(const void* p, size_t n);
  void String(std::string_view s);

  std::vector<uint8_t> keys_;     // encoded key/values
  std::vector<uint8_t> tensors_;  // encoded tensor infos
  std::vector<uint8_t>* out_ = &keys_;
  uint64_t n_keys_ = 0;
  uint64_t n_tensors_ = 0;
};

}  // namespace staticlm::hf
