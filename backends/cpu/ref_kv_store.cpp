#include <cmath>
#include <cstring>

#include "backends/cpu/hadamard.h"
#include "backends/cpu/half.h"
#include "backends/cpu/reference_kernels.h"
#include "contract/kv_policy.h"

namespace staticlm::cpu::ref {
namespace {

void StorePlain(DType type, uint8_t* base, int64_t index, float value) {
  if (type == DType::kF16) {
    uint16_t h = FloatToHalf(value);
    std::memcpy(base + index * 2, &h, 2);
  } else {
    std::memcpy(base + index * 4, &value, 4);
  }
}

// q8: one (token, head) row of head_dim values, Hadamard-rotated (backends/cpu/hadamard.h),
// then symmetric with scale max|x| / 127.
void StoreQ8Row(const float* row, int64_t n, int8_t* q, float* scale) {
  float x[256];  // head_dim ≤ 256 (plan validation)
  for (int64_t d = 0; d < n; ++d) x[d] = row[d];
  Hadamard(x, n);
  float amax = 0.0f;
  for (int64_t d = 0; d < n; ++d) amax = std::fabs(x[d]) > amax ? std::fabs(x[d]) : amax;
  const float s = amax / 127.0f;
  const float inv = s > 0.0f ? 1.0f / s : 0.0f;
  for (int64_t d = 0; d < n; ++d) {
    float r = std::nearbyint(x[d] * inv);
    q[d] = static_cast<int8_t>(r > 127.0f ? 127.0f : (r < -127.0f ? -127.0f : r));
  }
  *scale = s;
}

// q4 codes: 0 … 15, value = code · scale + min.
uint8_t Code4(float x, float scale, float min) {
  if (scale <= 0.0f) return 0;
  float r = std::nearbyint((x - min) / scale);
  return static_cast<uint8_t>(r < 0.0f ? 0.0f : (r > 15.0f ? 15.0f : r));
}

void PutNibble(uint8_t* base, int64_t index, uint8_t code) {
  uint8_t& byte = base[index / 2];
  byte = index % 2 == 0 ? static_cast<uint8_t>((byte & 0xF0) | code)
                        : static_cast<uint8_t>((byte & 0x0F) | (code << 4));
}

// q4: quantizes the group of positions [first, first + group) from the rings into the cache:
// keys per channel over the group (KIVI), values per token over the head.
void QuantizeGroup(const KvCacheView& c, int64_t first) {
  const OpParams& p = c.params;
  const int64_t hd = p.head_dim, slots = p.cache_slots, group = p.kv_group;
  const int64_t slot0 = KvSlot(p, first);  // a multiple of group: the group's slots follow it
  for (int64_t g = 0; g < p.n_kv_heads; ++g) {
    auto recent = [&](const float* ring, int64_t t) {
      return ring + (g * p.recent_slots + t % p.recent_slots) * hd;
    };
    float* k_params = c.k_side + (g * (slots / group) + slot0 / group) * 2 * hd;
    for (int64_t d = 0; d < hd; ++d) {
      float lo = recent(c.k_recent, first)[d], hi = lo;
      for (int64_t t = first; t < first + group; ++t) {
        float x = recent(c.k_recent, t)[d];
        lo = x < lo ? x : lo;
        hi = x > hi ? x : hi;
      }
      const float scale = (hi - lo) / 15.0f;
      k_params[d] = scale;
      k_params[hd + d] = lo;
      for (int64_t t = first; t < first + group; ++t) {
        int64_t index = (g * slots + slot0 + (t - first)) * hd + d;
        PutNibble(c.k, index, Code4(recent(c.k_recent, t)[d], scale, lo));
      }
    }
    for (int64_t t = first; t < first + group; ++t) {
      const float* x = recent(c.v_recent, t);
      float lo = x[0], hi = x[0];
      for (int64_t d = 0; d < hd; ++d) {
        lo = x[d] < lo ? x[d] : lo;
        hi = x[d] > hi ? x[d] : hi;
      }
      const int64_t row = g * slots + slot0 + (t - first);
      const float scale = (hi - lo) / 15.0f;
      c.v_side[row * 2] = scale;
      c.v_side[row * 2 + 1] = lo;
      for (int64_t d = 0; d < hd; ++d) PutNibble(c.v, row * hd + d, Code4(x[d], scale, lo));
    }
  }
}

}  // namespace

void KvStore(const float* k, const float* v, int64_t rows, int32_t first_position,
             const KvCacheView& c) {
  const OpParams& p = c.params;
  const int64_t hd = p.head_dim, kv_heads = p.n_kv_heads;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t position = first_position + r;
    const int64_t slot = KvSlot(p, position);
    for (int64_t g = 0; g < kv_heads; ++g) {
      const float* k_src = k + (r * kv_heads + g) * hd;
      const float* v_src = v + (r * kv_heads + g) * hd;
      const int64_t row = g * p.cache_slots + slot;  // (kv_heads, slots, head_dim)
      switch (p.kv_quant) {
        case KvQuant::kNone:
          for (int64_t d = 0; d < hd; ++d) {
            StorePlain(c.type, c.k, row * hd + d, k_src[d]);
            StorePlain(c.type, c.v, row * hd + d, v_src[d]);
          }
          break;
        case KvQuant::kQ8:
          StoreQ8Row(k_src, hd, reinterpret_cast<int8_t*>(c.k) + row * hd, c.k_side + row);
          StoreQ8Row(v_src, hd, reinterpret_cast<int8_t*>(c.v) + row * hd, c.v_side + row);
          break;
        case KvQuant::kQ4: {
          const int64_t ring = (g * p.recent_slots + position % p.recent_slots) * hd;
          std::memcpy(c.k_recent + ring, k_src, static_cast<size_t>(hd) * sizeof(float));
          std::memcpy(c.v_recent + ring, v_src, static_cast<size_t>(hd) * sizeof(float));
          break;
        }
      }
    }
  }
  if (p.kv_quant == KvQuant::kQ4) {
    const int64_t step_end = first_position + rows;
    for (int64_t first = first_position / p.kv_group * p.kv_group; first + p.kv_group <= step_end;
         first += p.kv_group) {
      QuantizeGroup(c, first);
    }
  }
}

}  // namespace staticlm::cpu::ref
