#include "backends/cpu/dequantize.h"
#include "backends/cpu/reference_kernels.h"

namespace staticlm::cpu::ref {

void Embed(DType type, const uint8_t* table, int64_t width, const int32_t* tokens, int64_t rows,
           float* out) {
  uint64_t row_bytes = DTypeBytes(type, static_cast<uint64_t>(width));
  for (int64_t r = 0; r < rows; ++r) {
    DequantizeRow(type, table + static_cast<uint64_t>(tokens[r]) * row_bytes, width,
                  out + r * width);
  }
}

}  // namespace staticlm::cpu::ref
