// Conversions a Hugging Face folder's tensors need at init, into the weight arena: stored
// F16/BF16 values to F32 (norms and biases, which the plan reads as F32), and F32/F16/BF16
// matrices quantized to the block types of contract/dtype.h with ggml's reference rounding
// (Q8_0 and Q4_0 match gguf-py's quantizer bit for bit; Q4_K is a simpler search than
// llama-quantize's, see weight_convert.cpp). Init only; nothing allocates.
#pragma once

#include <cstdint>

#include "contract/dtype.h"

namespace staticlm::hf {

// `n` values of `type` (F32, F16 or BF16) to floats.
void ToF32(DType type, const uint8_t* in, int64_t n, float* out);

// Whether QuantizeRow encodes `type` (Q8_0, Q4_0, Q4_K).
bool CanQuantizeTo(DType type);

// Encodes `n` floats (a multiple of the block size) as `type` into DTypeBytes(type, n) bytes.
void QuantizeRow(DType type, const float* x, int64_t n, uint8_t* out);

}  // namespace staticlm::hf
