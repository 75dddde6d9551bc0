#include <cmath>

#include "backends/cpu/reference_kernels.h"

namespace staticlm::cpu::ref {

void RmsNorm(const float* x, const float* weight, int64_t rows, int64_t n, float eps, float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float sum_squares = 0.0f;
    for (int64_t i = 0; i < n; ++i) sum_squares += xr[i] * xr[i];
    float inv_rms = 1.0f / std::sqrt(sum_squares / static_cast<float>(n) + eps);
    for (int64_t i = 0; i < n; ++i) y[r * n + i] = xr[i] * inv_rms * weight[i];
  }
}

}  // namespace staticlm::cpu::ref
