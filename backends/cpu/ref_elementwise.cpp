#include <cmath>

#include "backends/cpu/reference_kernels.h"

namespace staticlm::cpu::ref {

void Add(float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) a[i] += b[i];
}

void AddBias(float* x, const float* bias, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) Add(x + r * n, bias, n);
}

void SiluMul(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void GeluMul(float* gate, const float* up, int64_t n) {
  const float k = 0.7978845608028654f;  // sqrt(2/π)
  for (int64_t i = 0; i < n; ++i) {
    float x = gate[i];
    gate[i] = 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x))) * up[i];
  }
}

void Softmax(float* x, int64_t n) {
  float max_value = x[0];
  for (int64_t i = 1; i < n; ++i) max_value = x[i] > max_value ? x[i] : max_value;
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max_value);
    sum += x[i];
  }
  for (int64_t i = 0; i < n; ++i) x[i] /= sum;
}

}  // namespace staticlm::cpu::ref
