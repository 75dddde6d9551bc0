// Internal to the fast matmuls: the packed 6-bit sub-block scales of Q4_K and Q5_K (dtype.h),
// unpacked to one byte each so that the SIMD kernels can widen and convert 8 or 16 at a time.
#pragma once

#include <cstdint>
#include <cstring>

namespace staticlm::cpu::kquant {

// sc[s] and m[s] of the 8 sub-blocks from the 12 bytes `packed` (a super-block's scales[]).
// Works on three 32-bit words, four sub-blocks at a time: the top two bits of bytes 0-7 reach
// bits 4-5 of the same byte by a word shift of 2, and the per-byte masks drop what the shift
// carries in from the next byte. Byte i of a word is packed[4k + i]: little-endian targets only
// (x86-64, arm64).
inline void UnpackScalesAndMins(const uint8_t* packed, uint8_t sc[8], uint8_t m[8]) {
  uint32_t w[3];
  std::memcpy(w, packed, sizeof(w));
  constexpr uint32_t kLow6 = 0x3f3f3f3f, kLow4 = 0x0f0f0f0f, kBits45 = 0x30303030;
  const uint32_t scales[2] = {w[0] & kLow6, (w[2] & kLow4) | ((w[0] >> 2) & kBits45)};
  const uint32_t mins[2] = {w[1] & kLow6, ((w[2] >> 4) & kLow4) | ((w[1] >> 2) & kBits45)};
  std::memcpy(sc, scales, sizeof(scales));
  std::memcpy(m, mins, sizeof(mins));
}

}  // namespace staticlm::cpu::kquant
