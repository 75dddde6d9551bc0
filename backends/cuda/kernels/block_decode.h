// One element of a weight row, decoded on its own: what a GPU lane needs to read a quantized
// row with the lanes of a warp on neighbouring elements. Every value is the same f32 operations,
// in the same order, as the CPU reference's block decoders (backends/cpu/dequantize*.cpp; the
// layouts are in contract/dtype.h), so it is bit for bit their result; tests/cuda_math_test.cpp
// checks that on random blocks of every type. Host and device (STATICLM_HD).
#pragma once

#include <cstdint>

#include "backends/cpu/half.h"
#include "contract/dtype.h"
#include "contract/hd.h"

namespace staticlm::cuda {

STATICLM_HD inline float ReadHalfAt(const uint8_t* p) {
  return cpu::HalfToFloat(static_cast<uint16_t>(p[0] | (p[1] << 8)));
}

STATICLM_HD inline uint32_t ReadU32At(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

// Bytes and elements of a block of each weight type (contract/dtype.h's DTypeInfo, usable on
// the device).
STATICLM_HD inline int BlockElements(DType t) {
  switch (t) {
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kQ8_0:
      return 32;
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
      return 256;
    default:
      return 1;
  }
}

STATICLM_HD inline int BlockBytes(DType t) {
  switch (t) {
    case DType::kF32:
      return 4;
    case DType::kF16:
    case DType::kBF16:
      return 2;
    case DType::kQ4_0:
      return 18;
    case DType::kQ4_1:
      return 20;
    case DType::kQ5_0:
      return 22;
    case DType::kQ5_1:
      return 24;
    case DType::kQ8_0:
      return 34;
    case DType::kQ4_K:
      return 144;
    case DType::kQ5_K:
      return 176;
    case DType::kQ6_K:
      return 210;
    default:
      return 0;
  }
}

// Q4/Q5 blocks: element j < 16 is the low nibble of qs[j], element j + 16 the high nibble.
STATICLM_HD inline int Nibble32(const uint8_t* qs, int j) {
  return j < 16 ? qs[j] & 0x0f : qs[j - 16] >> 4;
}

// The fifth bit of element j of a Q5_0/Q5_1 block: bit j of qh read as a little-endian u32.
STATICLM_HD inline int FifthBit(const uint8_t* qh, int j) {
  return static_cast<int>((ReadU32At(qh) >> j) & 1u);
}

// The 6-bit scale and min of sub-block s of a Q4_K/Q5_K super-block (contract/dtype.h).
STATICLM_HD inline void KQuantScaleMin(const uint8_t* scales, int s, int* sc, int* m) {
  if (s < 4) {
    *sc = scales[s] & 63;
    *m = scales[s + 4] & 63;
    return;
  }
  *sc = (scales[s + 4] & 15) | ((scales[s - 4] >> 6) << 4);
  *m = (scales[s + 4] >> 4) | ((scales[s] >> 6) << 4);
}

// Element k (0 … 255) of a Q4_K (qh null) or Q5_K super-block.
STATICLM_HD inline float DecodeQ45K(const uint8_t* block, const uint8_t* qh, const uint8_t* qs,
                                    int k) {
  const int s = k / 32, e = k % 32;
  int sc = 0, m = 0;
  KQuantScaleMin(block + 4, s, &sc, &m);
  const float scale = ReadHalfAt(block) * static_cast<float>(sc);
  const float offset = ReadHalfAt(block + 2) * static_cast<float>(m);
  int q = (qs[32 * (s / 2) + e] >> ((s % 2) * 4)) & 15;
  if (qh != nullptr) q |= ((qh[e] >> s) & 1) << 4;
  return scale * static_cast<float>(q) - offset;
}

// Element i (0 … 255) of a Q6_K super-block.
STATICLM_HD inline float DecodeQ6K(const uint8_t* block, int i) {
  const int h = i / 128, r = i % 128;
  const int low = (block[64 * h + r % 64] >> (r < 64 ? 0 : 4)) & 15;
  const int high = (block[128 + 32 * h + r % 32] >> (2 * (r / 32))) & 3;
  const int q = (low | (high << 4)) - 32;
  const int8_t scale = static_cast<int8_t>(block[192 + i / 16]);
  return (ReadHalfAt(block + 208) * static_cast<float>(scale)) * static_cast<float>(q);
}

// Element j of the block at `block` of type t (j < BlockElements(t)).
STATICLM_HD inline float DecodeInBlock(DType t, const uint8_t* block, int j) {
  switch (t) {
    case DType::kF32:
      return cpu::BitsToFloat(ReadU32At(block));
    case DType::kF16:
      return ReadHalfAt(block);
    case DType::kBF16:
      return cpu::BFloat16ToFloat(static_cast<uint16_t>(block[0] | (block[1] << 8)));
    case DType::kQ4_0: {
      const float d = ReadHalfAt(block);
      return static_cast<float>(Nibble32(block + 2, j)) * d + -8.0f * d;
    }
    case DType::kQ4_1:
      return static_cast<float>(Nibble32(block + 4, j)) * ReadHalfAt(block) + ReadHalfAt(block + 2);
    case DType::kQ5_0: {
      const int q = Nibble32(block + 6, j) | (FifthBit(block + 2, j) << 4);
      return static_cast<float>(q - 16) * ReadHalfAt(block);
    }
    case DType::kQ5_1: {
      const int q = Nibble32(block + 8, j) | (FifthBit(block + 4, j) << 4);
      return static_cast<float>(q) * ReadHalfAt(block) + ReadHalfAt(block + 2);
    }
    case DType::kQ8_0:
      return static_cast<float>(static_cast<int8_t>(block[2 + j])) * ReadHalfAt(block);
    case DType::kQ4_K:
      return DecodeQ45K(block, nullptr, block + 16, j);
    case DType::kQ5_K:
      return DecodeQ45K(block, block + 16, block + 48, j);
    case DType::kQ6_K:
      return DecodeQ6K(block, j);
    default:
      return 0.0f;
  }
}

// Element `index` of a row of type t.
STATICLM_HD inline float DecodeElement(DType t, const uint8_t* row, int64_t index) {
  const int be = BlockElements(t);
  return DecodeInBlock(t, row + index / be * BlockBytes(t), static_cast<int>(index % be));
}

// Whether DecodeElement knows type t (every weight type of contract/dtype.h).
STATICLM_HD inline bool DecodableWeightType(DType t) {
  return BlockBytes(t) > 0 && t != DType::kI32;
}

}  // namespace staticlm::cuda
