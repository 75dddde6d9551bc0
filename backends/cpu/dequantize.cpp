#include "backends/cpu/dequantize.h"

#include "backends/cpu/dequantize_k.h"
#include "backends/cpu/half.h"

namespace staticlm::cpu {
namespace {

uint16_t ReadU16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}

float ReadF32(const uint8_t* p) {
  uint32_t bits = static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
                  (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
  return BitsToFloat(bits);
}

// Q4 blocks: element j < 16 is the low nibble of qs[j], element j + 16 the high nibble.
void DecodeNibbles(const uint8_t* qs, float d, float offset, float* out) {
  for (int j = 0; j < 16; ++j) {
    out[j] = static_cast<float>(qs[j] & 0x0f) * d + offset;
    out[j + 16] = static_cast<float>(qs[j] >> 4) * d + offset;
  }
}

// Q5 blocks: the Q4 nibbles plus a fifth bit, bit j of qh (a little-endian u32) for element j.
// value = q * d + offset with q in 0..31 (Q5_1), or (q - 16) * d (Q5_0, offset unused).
void DecodeFiveBits(const uint8_t* qh_bytes, const uint8_t* qs, float d, const float* offset,
                    float* out) {
  uint32_t qh = static_cast<uint32_t>(qh_bytes[0]) | (static_cast<uint32_t>(qh_bytes[1]) << 8) |
                (static_cast<uint32_t>(qh_bytes[2]) << 16) |
                (static_cast<uint32_t>(qh_bytes[3]) << 24);
  for (int j = 0; j < 32; ++j) {
    int nibble = j < 16 ? qs[j] & 0x0f : qs[j - 16] >> 4;
    int q = nibble | static_cast<int>(((qh >> j) & 1u) << 4);
    out[j] =
        offset != nullptr ? static_cast<float>(q) * d + *offset : static_cast<float>(q - 16) * d;
  }
}

}  // namespace

void DequantizeBlock(DType type, const uint8_t* row, int64_t block_index, float* out) {
  DTypeInfo info = GetDTypeInfo(type);
  const uint8_t* block = row + block_index * info.block_bytes;
  switch (type) {
    case DType::kF32:
      out[0] = ReadF32(block);
      return;
    case DType::kF16:
      out[0] = HalfToFloat(ReadU16(block));
      return;
    case DType::kBF16:
      out[0] = BFloat16ToFloat(ReadU16(block));
      return;
    case DType::kQ4_0: {
      float d = HalfToFloat(ReadU16(block));
      DecodeNibbles(block + 2, d, -8.0f * d, out);
      return;
    }
    case DType::kQ4_1: {
      float d = HalfToFloat(ReadU16(block));
      float m = HalfToFloat(ReadU16(block + 2));
      DecodeNibbles(block + 4, d, m, out);
      return;
    }
    case DType::kQ5_0: {
      DecodeFiveBits(block + 2, block + 6, HalfToFloat(ReadU16(block)), nullptr, out);
      return;
    }
    case DType::kQ5_1: {
      float m = HalfToFloat(ReadU16(block + 2));
      DecodeFiveBits(block + 4, block + 8, HalfToFloat(ReadU16(block)), &m, out);
      return;
    }
    case DType::kQ4_K:
      kquant::DecodeQ4K(block, out);
      return;
    case DType::kQ5_K:
      kquant::DecodeQ5K(block, out);
      return;
    case DType::kQ6_K:
      kquant::DecodeQ6K(block, out);
      return;
    case DType::kQ8_0: {
      float d = HalfToFloat(ReadU16(block));
      const int8_t* qs = reinterpret_cast<const int8_t*>(block + 2);
      for (int j = 0; j < 32; ++j) out[j] = static_cast<float>(qs[j]) * d;
      return;
    }
    case DType::kI32:
      out[0] = static_cast<float>(static_cast<int32_t>(FloatToBits(ReadF32(block))));
      return;
  }
}

void DequantizeRow(DType type, const uint8_t* row, int64_t n, float* out) {
  int64_t block_elements = GetDTypeInfo(type).block_elements;
  for (int64_t b = 0; b < n / block_elements; ++b) {
    DequantizeBlock(type, row, b, out + b * block_elements);
  }
}

float DotRow(DType type, const uint8_t* row, const float* x, int64_t n) {
  int64_t block_elements = GetDTypeInfo(type).block_elements;
  float values[kMaxBlockElements];
  float sum = 0.0f;
  for (int64_t b = 0; b < n / block_elements; ++b) {
    DequantizeBlock(type, row, b, values);
    const float* xb = x + b * block_elements;
    for (int64_t j = 0; j < block_elements; ++j) sum += values[j] * xb[j];
  }
  return sum;
}

}  // namespace staticlm::cpu
