// Conversions between f32 and the 16-bit float formats, written out bit by bit so that the
// reference kernels do not depend on compiler extensions or CPU features.
#pragma once

#include <cstdint>
#include <cstring>

#include "contract/hd.h"

namespace staticlm::cpu {

STATICLM_HD inline float BitsToFloat(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

STATICLM_HD inline uint32_t FloatToBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  return bits;
}

// IEEE 754 binary16 → binary32, exact for every input (subnormals, infinities, NaN). On a CUDA
// device it is the hardware's conversion, which is exact too, so the value is the same, in one
// instruction instead of these: the CUDA decoders convert a block's scales once per element.
STATICLM_HD inline float HalfToFloat(uint16_t h) {
#if defined(__CUDA_ARCH__)
  float converted;
  asm("cvt.f32.f16 %0, %1;" : "=f"(converted) : "h"(h));
  return converted;
#else
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return BitsToFloat(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    if (mantissa == 0) return BitsToFloat(sign);
    // Subnormal: value = mantissa · 2^-24.
    float magnitude = static_cast<float>(mantissa) * (1.0f / 16777216.0f);
    return sign ? -magnitude : magnitude;
  }
  return BitsToFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
#endif
}

// binary32 → binary16 with round-to-nearest-even; overflow gives infinity.
STATICLM_HD inline uint16_t FloatToHalf(float f) {
  uint32_t bits = FloatToBits(f);
  uint32_t sign = (bits >> 16) & 0x8000u;
  uint32_t abs_bits = bits & 0x7fffffffu;
  if (abs_bits >= 0x7f800000u) {  // infinity or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (abs_bits > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs_bits >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (abs_bits < 0x38800000u) {  // below the smallest normal half: subnormal or zero
    // Add 0.5 so the float adder does the rounding to a multiple of 2^-24.
    float rounded = BitsToFloat(abs_bits) + 0.5f;
    return static_cast<uint16_t>(sign | (FloatToBits(rounded) - 0x3f000000u));
  }
  uint32_t mantissa_odd = (abs_bits >> 13) & 1u;
  abs_bits += 0xc8000fffu + mantissa_odd;  // rebias exponent (−112 << 23) and round to even
  return static_cast<uint16_t>(sign | (abs_bits >> 13));
}

// bfloat16 is the top half of a binary32.
STATICLM_HD inline float BFloat16ToFloat(uint16_t b) {
  return BitsToFloat(static_cast<uint32_t>(b) << 16);
}

}  // namespace staticlm::cpu
