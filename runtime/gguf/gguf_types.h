// GGUF vocabulary: metadata value types, ggml tensor type names and the format's limits.
// Plain constants and lookups; nothing here allocates.
#pragma once

#include <cstdint>

namespace staticlm::gguf {

// Metadata value types; the numeric values are the ones stored in the file.
enum class ValueType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};
constexpr uint32_t kValueTypeCount = 13;

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr uint32_t kDefaultAlignment = 32;
constexpr uint32_t kMaxDims = 4;
// ggml keeps tensor names in a 64-byte buffer with a terminator, so longer names never load.
constexpr uint64_t kMaxTensorNameBytes = 63;
constexpr uint64_t kMaxKeyBytes = 65535;  // the spec's limit on key length
// Arrays may hold arrays; deeper nesting than this is rejected (no real model nests at all).
constexpr int kMaxArrayDepth = 4;

inline bool IsValidValueType(uint32_t t) {
  return t < kValueTypeCount;
}

// "u8", "i32", "string", "array", ...; "unknown" for ids outside the enum.
const char* ValueTypeName(ValueType t);

// Bytes of one value of a fixed-size type; 0 for kString and kArray.
uint32_t ScalarBytes(ValueType t);

bool IsIntegerType(ValueType t);

// ggml's name for a tensor type id ("Q4_1", "Q5_K", ...), or nullptr for an id ggml never
// assigned. Covers types staticlm cannot run, so errors can name them.
const char* GgmlTypeName(uint32_t type_id);

}  // namespace staticlm::gguf
