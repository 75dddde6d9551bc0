// A helper of the x86 integer-activation kernels that needs only SSE2 (baseline x86-64), so
// every ISA's file can call it.
#pragma once

#include <emmintrin.h>

#include <cstdint>

namespace staticlm::cpu::detail {

// Σ of the 16 int8 values at q: psadbw of q + 128 against zero sums each 8 bytes (at most
// 8 · 255), less 16 · 128. Q6_K's products need the sum of each half of an activation block.
inline int32_t SumInt8x16(const int8_t* q) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
  const __m128i sad =
      _mm_sad_epu8(_mm_xor_si128(v, _mm_set1_epi8(static_cast<char>(0x80))), _mm_setzero_si128());
  return _mm_cvtsi128_si32(sad) + _mm_extract_epi16(sad, 4) - 16 * 128;
}

}  // namespace staticlm::cpu::detail
