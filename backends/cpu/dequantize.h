// Block decoding for every weight type, shared by the reference kernels. Plain loops.
#pragma once

#include <cstdint>

#include "contract/dtype.h"

namespace staticlm::cpu {

// The largest block (the K-quants' 256): enough for a stack buffer of one decoded block.
constexpr int kMaxBlockElements = 256;

// Decodes block `block_index` of a row of type `type` into `out` (block_elements values),
// bit for bit what ggml and gguf-py decode (contract/dtype.h gives each layout).
void DequantizeBlock(DType type, const uint8_t* row, int64_t block_index, float* out);

// Decodes the first `n` elements of a row into `out`; `n` must be a multiple of the block size.
void DequantizeRow(DType type, const uint8_t* row, int64_t n, float* out);

// Σ row[i] · x[i] over n elements, accumulated in f32 in index order. Uses a stack buffer of
// kMaxBlockElements floats (1 KiB).
float DotRow(DType type, const uint8_t* row, const float* x, int64_t n);

}  // namespace staticlm::cpu
