#include <cmath>

#include "backends/cpu/reference_kernels.h"

namespace staticlm::cpu::ref {

void Rope(float* x, int64_t rows, int64_t n_heads, int64_t head_dim, int32_t first_position,
          float base) {
  for (int64_t r = 0; r < rows; ++r) {
    double position = static_cast<double>(first_position) + static_cast<double>(r);
    for (int64_t i = 0; i < head_dim / 2; ++i) {
      // The angle in double: at positions in the thousands f32 would lose ~1e-4 rad.
      double inv_freq = std::pow(static_cast<double>(base),
                                 -2.0 * static_cast<double>(i) / static_cast<double>(head_dim));
      float c = static_cast<float>(std::cos(position * inv_freq));
      float s = static_cast<float>(std::sin(position * inv_freq));
      for (int64_t h = 0; h < n_heads; ++h) {
        float* pair = x + r * n_heads * head_dim + h * head_dim + 2 * i;
        float x0 = pair[0];
        float x1 = pair[1];
        pair[0] = x0 * c - x1 * s;
        pair[1] = x0 * s + x1 * c;
      }
    }
  }
}

void RopeHalves(float* x, int64_t rows, int64_t n_heads, int64_t head_dim, int32_t first_position,
                float base) {
  const int64_t half = head_dim / 2;
  for (int64_t r = 0; r < rows; ++r) {
    double position = static_cast<double>(first_position) + static_cast<double>(r);
    for (int64_t i = 0; i < half; ++i) {
      // The same angles as Rope: only which two elements form pair i differs.
      double inv_freq = std::pow(static_cast<double>(base),
                                 -2.0 * static_cast<double>(i) / static_cast<double>(head_dim));
      float c = static_cast<float>(std::cos(position * inv_freq));
      float s = static_cast<float>(std::sin(position * inv_freq));
      for (int64_t h = 0; h < n_heads; ++h) {
        float* head = x + r * n_heads * head_dim + h * head_dim;
        float x0 = head[i];
        float x1 = head[i + half];
        head[i] = x0 * c - x1 * s;
        head[i + half] = x0 * s + x1 * c;
      }
    }
  }
}

void RopeScaled(float* x, int64_t rows, int64_t n_heads, int64_t head_dim, int64_t rope_dims,
                int32_t first_position, float base, const float* factors, float scale,
                bool halves) {
  const int64_t half = rope_dims / 2;
  // Pair i: (x[i], x[i + half]) when halves, else (x[2i], x[2i + 1]).
  const int64_t stride = halves ? 1 : 2, partner = halves ? half : 1;
  for (int64_t r = 0; r < rows; ++r) {
    double position = static_cast<double>(first_position) + static_cast<double>(r);
    for (int64_t i = 0; i < half; ++i) {
      double inv_freq = std::pow(static_cast<double>(base),
                                 -2.0 * static_cast<double>(i) / static_cast<double>(rope_dims));
      if (factors != nullptr) inv_freq /= static_cast<double>(factors[i]);
      float c = static_cast<float>(std::cos(position * inv_freq)) * scale;
      float s = static_cast<float>(std::sin(position * inv_freq)) * scale;
      for (int64_t h = 0; h < n_heads; ++h) {
        float* head = x + r * n_heads * head_dim + h * head_dim;
        float x0 = head[i * stride];
        float x1 = head[i * stride + partner];
        head[i * stride] = x0 * c - x1 * s;
        head[i * stride + partner] = x0 * s + x1 * c;
      }
    }
  }
}

}  // namespace staticlm::cpu::ref
