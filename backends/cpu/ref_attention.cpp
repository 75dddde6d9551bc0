#include <cmath>
#include <cstring>

#include "backends/cpu/half.h"
#include "backends/cpu/reference_kernels.h"

namespace staticlm::cpu::ref {
namespace {

float LoadValue(DType type, const uint8_t* base, int64_t index) {
  if (type == DType::kF16) {
    uint16_t h;
    std::memcpy(&h, base + index * 2, 2);
    return HalfToFloat(h);
  }
  float f;
  std::memcpy(&f, base + index * 4, 4);
  return f;
}

}  // namespace

void Attention(const float* q, int64_t rows, int64_t n_heads, int64_t kv_heads, int64_t head_dim,
               int64_t capacity, int32_t first_position, float scale, DType cache_type,
               const uint8_t* k_cache, const uint8_t* v_cache, float* scores_all, float* out,
               int64_t head_begin, int64_t head_end) {
  int64_t group = n_heads / kv_heads;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t last_slot = first_position + r;  // Static cache: slot = position
    for (int64_t h = head_begin; h < head_end; ++h) {
      float* scores = scores_all + h * capacity;
      const float* qh = q + (r * n_heads + h) * head_dim;
      int64_t g = h / group;
      for (int64_t t = 0; t <= last_slot; ++t) {
        float dot = 0.0f;
        for (int64_t d = 0; d < head_dim; ++d) {
          dot += qh[d] * LoadValue(cache_type, k_cache, (g * capacity + t) * head_dim + d);
        }
        scores[t] = dot * scale;
      }
      Softmax(scores, last_slot + 1);
      float* oh = out + (r * n_heads + h) * head_dim;
      for (int64_t d = 0; d < head_dim; ++d) oh[d] = 0.0f;
      for (int64_t t = 0; t <= last_slot; ++t) {
        for (int64_t d = 0; d < head_dim; ++d) {
          oh[d] += scores[t] * LoadValue(cache_type, v_cache, (g * capacity + t) * head_dim + d);
        }
      }
    }
  }
}

}  // namespace staticlm::cpu::ref
