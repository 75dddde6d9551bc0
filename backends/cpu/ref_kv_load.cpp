#include <cmath>
#include <cstring>

#include "backends/cpu/half.h"
#include "backends/cpu/reference_kernels.h"
#include "contract/kv_policy.h"

namespace staticlm::cpu::ref {
namespace {

float Plain(DType type, const uint8_t* base, int64_t index) {
  if (type == DType::kF16) {
    uint16_t h;
    std::memcpy(&h, base + index * 2, 2);
    return HalfToFloat(h);
  }
  float f;
  std::memcpy(&f, base + index * 4, 4);
  return f;
}

float Nibble(const uint8_t* base, int64_t index) {
  uint8_t byte = base[index / 2];
  return static_cast<float>(index % 2 == 0 ? (byte & 0x0F) : (byte >> 4));
}

}  // namespace

float LoadKey(const KvCacheView& c, int64_t step_end, int64_t t, int64_t g, int64_t d) {
  const OpParams& p = c.params;
  const int64_t hd = p.head_dim;
  if (p.kv_quant == KvQuant::kQ4 && t >= QuantizedEnd(p, step_end)) {
    return c.k_recent[(g * p.recent_slots + t % p.recent_slots) * hd + d];
  }
  const int64_t slot = KvSlot(p, t);
  const int64_t row = g * p.cache_slots + slot;
  switch (p.kv_quant) {
    case KvQuant::kNone:
      return Plain(c.type, c.k, row * hd + d);
    case KvQuant::kQ8:
      return static_cast<float>(reinterpret_cast<const int8_t*>(c.k)[row * hd + d]) * c.k_side[row];
    case KvQuant::kQ4: {
      const float* params =
          c.k_side + (g * (p.cache_slots / p.kv_group) + slot / p.kv_group) * 2 * hd;
      return Nibble(c.k, row * hd + d) * params[d] + params[hd + d];
    }
  }
  return 0.0f;
}

float LoadValue(const KvCacheView& c, int64_t step_end, int64_t t, int64_t g, int64_t d) {
  const OpParams& p = c.params;
  const int64_t hd = p.head_dim;
  if (p.kv_quant == KvQuant::kQ4 && t >= QuantizedEnd(p, step_end)) {
    return c.v_recent[(g * p.recent_slots + t % p.recent_slots) * hd + d];
  }
  const int64_t row = g * p.cache_slots + KvSlot(p, t);
  switch (p.kv_quant) {
    case KvQuant::kNone:
      return Plain(c.type, c.v, row * hd + d);
    case KvQuant::kQ8:
      return static_cast<float>(reinterpret_cast<const int8_t*>(c.v)[row * hd + d]) * c.v_side[row];
    case KvQuant::kQ4:
      return Nibble(c.v, row * hd + d) * c.v_side[row * 2] + c.v_side[row * 2 + 1];
  }
  return 0.0f;
}

void RotateQuery(const float* q, const OpParams& p, int64_t delta, const float* factors,
                 float* out) {
  const int64_t head_dim = p.head_dim, rope_dims = RopeDims(p), half = rope_dims / 2;
  // Pair i is (2i, 2i + 1), or (i, i + rope_dims / 2) when the model's RoPE rotates halves;
  // elements from rope_dims on are not turned (partial RoPE).
  const int64_t stride = p.rope_halves ? 1 : 2, partner = p.rope_halves ? half : 1;
  for (int64_t d = rope_dims; d < head_dim; ++d) out[d] = q[d];
  for (int64_t i = 0; i < half; ++i) {
    double inv_freq = std::pow(static_cast<double>(p.rope_base),
                               -2.0 * static_cast<double>(i) / static_cast<double>(rope_dims));
    if (factors != nullptr) inv_freq /= static_cast<double>(factors[i]);
    double angle = static_cast<double>(delta) * inv_freq;
    float c = static_cast<float>(std::cos(angle));
    float s = static_cast<float>(std::sin(angle));
    const int64_t a = i * stride, b = a + partner;
    out[a] = q[a] * c - q[b] * s;
    out[b] = q[a] * s + q[b] * c;
  }
}

}  // namespace staticlm::cpu::ref
