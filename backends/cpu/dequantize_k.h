// Decoding of the K-quant super-blocks (Q4_K, Q5_K, Q6_K: 256 elements each), split from
// dequantize.cpp for length. The layouts and the exact order of the f32 operations are in
// contract/dtype.h. Plain loops; the oracle for every faster K-quant kernel.
#pragma once

#include <cstdint>

namespace staticlm::cpu::kquant {

// Each decodes one block starting at `block` into out[0..255].
void DecodeQ4K(const uint8_t* block, float* out);
void DecodeQ5K(const uint8_t* block, float* out);
void DecodeQ6K(const uint8_t* block, float* out);

// Element i (0..255) of a Q6_K block as its signed integer q6 − 32, in [−32, 31]; its value is
// d · scales[i / 16] · Q6KInteger(block, i) (the integer-activation product reads it too).
int Q6KInteger(const uint8_t* block, int i);

}  // namespace staticlm::cpu::kquant
