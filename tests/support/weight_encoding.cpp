#include "tests/support/weight_encoding.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace staticlm::test {

namespace {

uint32_t FloatBits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return x;
}

float BitsFloat(uint32_t x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

void Put16(uint8_t* p, uint16_t v) {
  std::memcpy(p, &v, 2);
}
uint16_t Get16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

// The value a float becomes after a round trip through f16, as the block scales do.
float RoundHalf(float f) {
  return HalfToFloat(FloatToHalf(f));
}

void QuantizeQ8_0(const float* x, uint8_t* block) {
  float amax = 0;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  float d = RoundHalf(amax / 127.0f);
  float id = d != 0 ? 1.0f / d : 0.0f;
  Put16(block, FloatToHalf(d));
  for (int j = 0; j < 32; ++j) {
    float q = std::clamp(std::round(x[j] * id), -127.0f, 127.0f);
    block[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(q));
  }
}

// Element j < 16 goes to the low nibble of qs[j], element j + 16 to its high nibble.
void PackNibbles(const int* q, uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>(q[j] | (q[j + 16] << 4));
}

void QuantizeQ4_0(const float* x, uint8_t* block) {
  // The scale is set by the value of largest magnitude, with its sign, so that value maps
  // exactly to nibble 0 (-8 · d).
  float max = 0;
  for (int j = 0; j < 32; ++j) {
    if (std::fabs(x[j]) > std::fabs(max)) max = x[j];
  }
  float d = RoundHalf(max / -8.0f);
  float id = d != 0 ? 1.0f / d : 0.0f;
  Put16(block, FloatToHalf(d));
  int q[32];
  for (int j = 0; j < 32; ++j) q[j] = std::clamp(static_cast<int>(x[j] * id + 8.5f), 0, 15);
  PackNibbles(q, block + 2);
}

void QuantizeQ4_1(const float* x, uint8_t* block) {
  float min = x[0];
  float max = x[0];
  for (int j = 1; j < 32; ++j) {
    min = std::min(min, x[j]);
    max = std::max(max, x[j]);
  }
  float d = RoundHalf((max - min) / 15.0f);
  float m = RoundHalf(min);
  float id = d != 0 ? 1.0f / d : 0.0f;
  Put16(block, FloatToHalf(d));
  Put16(block + 2, FloatToHalf(m));
  int q[32];
  for (int j = 0; j < 32; ++j) {
    q[j] = std::clamp(static_cast<int>((x[j] - m) * id + 0.5f), 0, 15);
  }
  PackNibbles(q, block + 4);
}

}  // namespace

uint16_t FloatToHalf(float f) {
  uint32_t x = FloatBits(f);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  uint32_t exp = (x >> 23) & 0xff;
  uint32_t mant = x & 0x7fffff;
  if (exp == 0xff) return sign | 0x7c00 | (mant != 0 ? 0x200 : 0);  // inf, nan
  int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) return sign | 0x7c00;  // too large: inf
  uint32_t h;
  uint32_t shift;
  if (e <= 0) {
    if (e < -10) return sign;  // below half the smallest subnormal
    mant |= 0x800000;
    shift = static_cast<uint32_t>(14 - e);
    h = mant >> shift;
  } else {
    shift = 13;
    h = (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  }
  uint32_t rest = mant & ((1u << shift) - 1);
  uint32_t halfway = 1u << (shift - 1);
  // A carry out of the mantissa correctly bumps the exponent (up to inf).
  if (rest > halfway || (rest == halfway && (h & 1) != 0)) ++h;
  return static_cast<uint16_t>(sign | h);
}

float HalfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  if (exp == 0) {
    float v = std::ldexp(static_cast<float>(mant), -24);
    return sign != 0 ? -v : v;
  }
  if (exp == 31) return BitsFloat(sign | 0x7f800000 | (mant << 13));
  return BitsFloat(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t FloatToBf16(float f) {
  uint32_t x = FloatBits(f);
  if ((x & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((x >> 16) | 0x40);  // nan
  x += 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

float Bf16ToFloat(uint16_t h) {
  return BitsFloat(static_cast<uint32_t>(h) << 16);
}

std::vector<uint8_t> EncodeFloats(DType type, const float* x, size_t n) {
  std::vector<uint8_t> out(DTypeBytes(type, n));
  uint8_t* p = out.data();
  switch (type) {
    case DType::kF32:
      std::memcpy(p, x, n * 4);
      break;
    case DType::kF16:
      for (size_t i = 0; i < n; ++i) Put16(p + 2 * i, FloatToHalf(x[i]));
      break;
    case DType::kBF16:
      for (size_t i = 0; i < n; ++i) Put16(p + 2 * i, FloatToBf16(x[i]));
      break;
    case DType::kQ8_0:
      for (size_t b = 0; b < n / 32; ++b) QuantizeQ8_0(x + 32 * b, p + 34 * b);
      break;
    case DType::kQ4_0:
      for (size_t b = 0; b < n / 32; ++b) QuantizeQ4_0(x + 32 * b, p + 18 * b);
      break;
    case DType::kQ4_1:
      for (size_t b = 0; b < n / 32; ++b) QuantizeQ4_1(x + 32 * b, p + 20 * b);
      break;
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
      return {};  // no encoder here: these types are tested against gguf-py's decoder
    case DType::kI32:
      for (size_t i = 0; i < n; ++i) {
        int32_t v = static_cast<int32_t>(x[i]);
        std::memcpy(p + 4 * i, &v, 4);
      }
      break;
  }
  return out;
}

std::vector<float> DecodeFloats(DType type, const uint8_t* p, size_t n) {
  if (GetDTypeInfo(type).block_elements > 32 || type == DType::kQ5_0 || type == DType::kQ5_1) {
    return {};  // no decoder here: see EncodeFloats
  }
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) {
    size_t b = i / 32;
    size_t j = i % 32;
    switch (type) {
      case DType::kF32:
        std::memcpy(&out[i], p + 4 * i, 4);
        break;
      case DType::kF16:
        out[i] = HalfToFloat(Get16(p + 2 * i));
        break;
      case DType::kBF16:
        out[i] = Bf16ToFloat(Get16(p + 2 * i));
        break;
      case DType::kQ8_0: {
        const uint8_t* block = p + 34 * b;
        out[i] = static_cast<int8_t>(block[2 + j]) * HalfToFloat(Get16(block));
        break;
      }
      case DType::kQ4_0: {
        const uint8_t* block = p + 18 * b;
        int q = j < 16 ? block[2 + j] & 0xf : block[2 + j - 16] >> 4;
        out[i] = static_cast<float>(q - 8) * HalfToFloat(Get16(block));
        break;
      }
      case DType::kQ4_1: {
        const uint8_t* block = p + 20 * b;
        int q = j < 16 ? block[4 + j] & 0xf : block[4 + j - 16] >> 4;
        out[i] = static_cast<float>(q) * HalfToFloat(Get16(block)) + HalfToFloat(Get16(block + 2));
        break;
      }
      case DType::kQ5_0:
      case DType::kQ5_1:
      case DType::kQ4_K:
      case DType::kQ5_K:
      case DType::kQ6_K:
        break;  // refused above
      case DType::kI32: {
        int32_t v;
        std::memcpy(&v, p + 4 * i, 4);
        out[i] = static_cast<float>(v);
        break;
      }
    }
  }
  return out;
}

}  // namespace staticlm::test
