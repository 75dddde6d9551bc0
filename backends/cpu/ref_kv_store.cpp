#include <cstring>

#include "backends/cpu/half.h"
#include "backends/cpu/reference_kernels.h"

namespace staticlm::cpu::ref {
namespace {

void StoreValue(DType type, uint8_t* base, int64_t index, float value) {
  if (type == DType::kF16) {
    uint16_t h = FloatToHalf(value);
    std::memcpy(base + index * 2, &h, 2);
  } else {
    std::memcpy(base + index * 4, &value, 4);
  }
}

}  // namespace

void KvStore(const float* k, const float* v, int64_t rows, int64_t kv_heads, int64_t head_dim,
             int64_t capacity, int32_t first_slot, DType cache_type, uint8_t* k_cache,
             uint8_t* v_cache) {
  for (int64_t r = 0; r < rows; ++r) {
    int64_t slot = first_slot + r;
    for (int64_t g = 0; g < kv_heads; ++g) {
      for (int64_t d = 0; d < head_dim; ++d) {
        int64_t src = r * kv_heads * head_dim + g * head_dim + d;
        int64_t dst = (g * capacity + slot) * head_dim + d;  // (kv_heads, capacity, head_dim)
        StoreValue(cache_type, k_cache, dst, k[src]);
        StoreValue(cache_type, v_cache, dst, v[src]);
      }
    }
  }
}

}  // namespace staticlm::cpu::ref
