#include "backends/cpu/dequantize.h"
#include "backends/cpu/reference_kernels.h"

namespace staticlm::cpu::ref {
namespace {

// Rows of x taken together: each weight block is decoded once for up to this many rows instead
// of once per row (a prefill chunk's product decoded every block once per token), with a stack
// buffer of one partial sum per row.
constexpr int64_t kRowGroup = 32;

// y[r][o] for r in [r_begin, r_begin + n_rows): Σ w[o][i] · x[r][i], each sum accumulated in
// f32 in index order, as DotRow does, so grouping the rows changes no bit.
void RowGroupColumn(DType type, const uint8_t* w_row, int64_t n_in, const float* x, int64_t r_begin,
                    int64_t n_rows, float* y, int64_t n_out, int64_t o) {
  const int64_t block_elements = GetDTypeInfo(type).block_elements;
  float values[kMaxBlockElements];
  float sums[kRowGroup] = {};
  for (int64_t b = 0; b < n_in / block_elements; ++b) {
    DequantizeBlock(type, w_row, b, values);
    const float* xb = x + r_begin * n_in + b * block_elements;
    // Element by element across the rows: consecutive additions go to different sums, so they
    // need not wait for one another, while each row's sum still adds its terms in index order.
    for (int64_t j = 0; j < block_elements; ++j) {
      for (int64_t r = 0; r < n_rows; ++r) sums[r] += values[j] * xb[r * n_in + j];
    }
  }
  for (int64_t r = 0; r < n_rows; ++r) y[(r_begin + r) * n_out + o] = sums[r];
}

}  // namespace

void MatMulColumns(DType type, const uint8_t* w, int64_t n_out, int64_t n_in, const float* x,
                   int64_t rows, float* y, int64_t o_begin, int64_t o_end) {
  const uint64_t row_bytes = DTypeBytes(type, static_cast<uint64_t>(n_in));
  for (int64_t r = 0; r < rows; r += kRowGroup) {
    const int64_t n_rows = rows - r < kRowGroup ? rows - r : kRowGroup;
    for (int64_t o = o_begin; o < o_end; ++o) {
      RowGroupColumn(type, w + static_cast<uint64_t>(o) * row_bytes, n_in, x, r, n_rows, y, n_out,
                     o);
    }
  }
}

void MatMul(DType type, const uint8_t* w, int64_t n_out, int64_t n_in, const float* x, int64_t rows,
            float* y) {
  MatMulColumns(type, w, n_out, n_in, x, rows, y, 0, n_out);
}

}  // namespace staticlm::cpu::ref
