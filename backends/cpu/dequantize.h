// Block decoding for every weight type, shared by the reference kernels. Plain loops.
#pragma once

#include <cstdint>

#include "backends/dtype.h"

namespace staticlm::cpu {

constexpr int kMaxBlockElements = 32;

// Decodes block `block_index` of a row of type `type` into `out` (block_elements values).
void DequantizeBlock(DType type, const uint8_t* row, int64_t block_index, float* out);

// Decodes the first `n` elements of a row into `out`; `n` must be a multiple of the block size.
void DequantizeRow(DType type, const uint8_t* row, int64_t n, float* out);

// Σ row[i] · x[i] over n elements, accumulated in f32 in index order.
float DotRow(DType type, const uint8_t* row, const float* x, int64_t n);

}  // namespace staticlm::cpu
