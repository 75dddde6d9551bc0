// Encoding of float values into the tensor types of contract/dtype.h, and back, for tests
// that build model files or check kernels. Written from the block layouts documented in
// dtype.h; the quantizers follow ggml's reference rounding rules. Test-only: allocates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "contract/dtype.h"

namespace staticlm::test {

uint16_t FloatToHalf(float f);  // IEEE binary16, round to nearest even
float HalfToFloat(uint16_t h);
uint16_t FloatToBf16(float f);  // round to nearest even
float Bf16ToFloat(uint16_t h);

// Encodes `n` floats as `type` (F32, F16, BF16, Q8_0, Q4_0 or Q4_1; `n` a multiple of the
// block size). Returns DTypeBytes(type, n) bytes, or nothing for a type it has no encoder for
// (Q5_0, Q5_1 and the K-quants).
std::vector<uint8_t> EncodeFloats(DType type, const float* x, size_t n);
inline std::vector<uint8_t> EncodeFloats(DType type, const std::vector<float>& x) {
  return EncodeFloats(type, x.data(), x.size());
}

// Decodes `n` values of `type` (any type EncodeFloats encodes) into floats; nothing for others.
std::vector<float> DecodeFloats(DType type, const uint8_t* data, size_t n);

}  // namespace staticlm::test
