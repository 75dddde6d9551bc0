#include "backends/cpu/dequantize.h"
#include "backends/cpu/reference_kernels.h"

namespace staticlm::cpu::ref {

void MatMul(DType type, const uint8_t* w, int64_t n_out, int64_t n_in, const float* x, int64_t rows,
            float* y) {
  uint64_t row_bytes = DTypeBytes(type, static_cast<uint64_t>(n_in));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < n_out; ++o) {
      y[r * n_out + o] = DotRow(type, w + static_cast<uint64_t>(o) * row_bytes, x + r * n_in, n_in);
    }
  }
}

}  // namespace staticlm::cpu::ref
