// Element types of tensors in a plan. The numeric values are GGUF/ggml type ids, so a tensor
// type read from a GGUF file converts by value after IsKnownDType() has accepted it.
//
// Block layouts (little-endian, 32 elements per block for the quantized types):
//   Q4_0: f16 d; u8 qs[16]            value[j] = (nibble - 8) * d
//   Q4_1: f16 d; f16 m; u8 qs[16]     value[j] = nibble * d + m
//   Q8_0: f16 d; i8 qs[32]            value[j] = qs[j] * d
// In Q4 blocks, element j < 16 is the low nibble of qs[j] and element j + 16 its high nibble.
#pragma once

#include <cstdint>

namespace staticlm {

enum class DType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ8_0 = 8,
  kI32 = 26,
  kBF16 = 30,
};

struct DTypeInfo {
  const char* name;
  uint32_t block_elements;  // elements per block (1 for plain types)
  uint32_t block_bytes;     // bytes per block
};

inline bool IsKnownDType(uint32_t id) {
  switch (id) {
    case 0:
    case 1:
    case 2:
    case 3:
    case 8:
    case 26:
    case 30:
      return true;
    default:
      return false;
  }
}

inline DTypeInfo GetDTypeInfo(DType t) {
  switch (t) {
    case DType::kF32:
      return {"F32", 1, 4};
    case DType::kF16:
      return {"F16", 1, 2};
    case DType::kQ4_0:
      return {"Q4_0", 32, 18};
    case DType::kQ4_1:
      return {"Q4_1", 32, 20};
    case DType::kQ8_0:
      return {"Q8_0", 32, 34};
    case DType::kI32:
      return {"I32", 1, 4};
    case DType::kBF16:
      return {"BF16", 1, 2};
  }
  return {"?", 1, 0};
}

inline const char* DTypeName(DType t) {
  return GetDTypeInfo(t).name;
}

// Bytes of `elements` values of type `t`; `elements` must be a multiple of the block size.
inline uint64_t DTypeBytes(DType t, uint64_t elements) {
  DTypeInfo info = GetDTypeInfo(t);
  return elements / info.block_elements * info.block_bytes;
}

}  // namespace staticlm
