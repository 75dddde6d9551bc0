// Element types of tensors in a plan. The numeric values are GGUF/ggml type ids, so a tensor
// type read from a GGUF file converts by value after IsKnownDType() has accepted it.
//
// Block layouts (little-endian, 32 elements per block for the quantized types):
//   Q4_0: f16 d; u8 qs[16]            value[j] = (nibble - 8) * d
//   Q4_1: f16 d; f16 m; u8 qs[16]     value[j] = nibble * d + m
//   Q8_0: f16 d; i8 qs[32]            value[j] = qs[j] * d
// Types only a plan uses (KV caches; IsKnownPlanDType, never read from a GGUF file):
//   I8:    one int8 per element (GGUF's I8 id); the q8 cache's scales are a separate tensor
//   KV_Q4: two 4-bit values per byte, element 2i the low nibble of byte i; the q4 cache's
//          scales and minimums are separate tensors
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

// The KV cache types. Constants rather than enumerators, so that switches over the weight types
// stay exhaustive without them.
inline constexpr DType kDTypeI8 = static_cast<DType>(24);
inline constexpr DType kDTypeKvQ4 = static_cast<DType>(0x10000);

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

// Known to a plan: the GGUF types above plus the KV cache types.
inline bool IsKnownPlanDType(uint32_t id) {
  return IsKnownDType(id) || id == 24 || id == 0x10000;
}

inline DTypeInfo GetDTypeInfo(DType t) {
  if (t == kDTypeI8) return {"I8", 1, 1};
  if (t == kDTypeKvQ4) return {"KV_Q4", 2, 1};
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
