// Element types of tensors in a plan. The numeric values are GGUF/ggml type ids, so a tensor
// type read from a GGUF file converts by value after IsKnownDType() has accepted it.
//
// Block layouts (little-endian; 32 elements per block, 256 for the K-quants). Every product and
// sum below is one f32 operation, rounded on its own, in the order written (the decoders match
// ggml's and gguf-py's bit for bit).
//   Q4_0: f16 d; u8 qs[16]                     value[j] = (nibble - 8) * d
//   Q4_1: f16 d; f16 m; u8 qs[16]              value[j] = nibble * d + m
//   Q5_0: f16 d; u8 qh[4]; u8 qs[16]           value[j] = (q - 16) * d
//   Q5_1: f16 d; f16 m; u8 qh[4]; u8 qs[16]    value[j] = q * d + m
//   Q8_0: f16 d; i8 qs[32]                     value[j] = qs[j] * d
// In Q4 and Q5 blocks, element j < 16 is the low nibble of qs[j] and element j + 16 its high
// nibble. In Q5 blocks the fifth bit of element j is bit j of qh read as a little-endian u32:
// q = nibble | (bit << 4).
//
// K-quants: a super-block of 256 elements in sub-blocks, one f16 super-scale (two for Q4_K and
// Q5_K) scaling small integer sub-block scales.
//   Q4_K (144 bytes): f16 d; f16 dmin; u8 scales[12]; u8 qs[128]
//   Q5_K (176 bytes): f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]
//     8 sub-blocks of 32, each with a 6-bit scale sc[s] and a 6-bit min m[s] packed in scales[]:
//       s < 4:  sc = scales[s] & 63                      m = scales[s + 4] & 63
//       s >= 4: sc = (scales[s + 4] & 15) | (scales[s - 4] >> 6) << 4
//               m  = (scales[s + 4] >> 4) | (scales[s] >> 6) << 4
//     element k of sub-block s (k < 32): nibble = qs[32 * (s / 2) + k], low nibble for even s,
//     high for odd s; Q5_K adds bit s of qh[k] as the fifth bit (q = nibble | bit << 4).
//       value = (d * sc) * q - (dmin * m)
//   Q6_K (210 bytes): u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d
//     two halves h of 128 elements; element r of half h (r < 128):
//       low 4 bits:  ql[64 * h + r % 64], low nibble for r < 64, high nibble for r >= 64
//       high 2 bits: (qh[32 * h + r % 32] >> (2 * (r / 32))) & 3
//       value = (d * scales[i / 16]) * (q - 32), with i = 128 * h + r the element's index
// Types only a plan uses (KV caches; IsKnownPlanDType, never read from a GGUF file):
//   I8:    one int8 per element (GGUF's I8 id); the q8 cache's scales are a separate tensor
//   KV_Q4: two 4-bit values per byte, element 2i the low nibble of byte i; the q4 cache's
//          scales and minimums are separate tensors
#pragma once

#include <cstdint>

namespace staticlm {

enum class DType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
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
    case 6:
    case 7:
    case 8:
    case 12:
    case 13:
    case 14:
    case 26:
    case 30:
      return true;
    default:
      return false;
  }
}

// Types a weight matrix (and an embedding table) may have in a plan. Every backend must
// either run them or refuse them at Prepare; the CPU reference kernels decode them all.
inline bool IsWeightMatrixDType(DType t) {
  switch (t) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kQ8_0:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
      return true;
    case DType::kI32:
      return false;
  }
  return false;
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
    case DType::kQ5_0:
      return {"Q5_0", 32, 22};
    case DType::kQ5_1:
      return {"Q5_1", 32, 24};
    case DType::kQ8_0:
      return {"Q8_0", 32, 34};
    case DType::kQ4_K:
      return {"Q4_K", 256, 144};
    case DType::kQ5_K:
      return {"Q5_K", 256, 176};
    case DType::kQ6_K:
      return {"Q6_K", 256, 210};
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
