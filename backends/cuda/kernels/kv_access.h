// One sequence's part of one layer's KV cache as the CUDA kernels address it, and the element
// reads of every cache type: the same arithmetic as the reference's LoadKey and LoadValue
// (backends/cpu/ref_kv_load.cpp), host and device, so tests/cuda_math_test.cpp compares them on
// the host. Slots and attended spans come from contract/kv_policy.h itself.
#pragma once

#include <cstdint>

#include "backends/cpu/half.h"
#include "contract/hd.h"
#include "contract/kv_policy.h"
#include "contract/plan.h"

namespace staticlm::cuda {

struct KvView {
  OpParams params;
  DType type;  // of k and v: F16, F32, I8 (q8), KV_Q4 (q4)
  uint8_t* k;  // (kv_heads, cache_slots, head_dim)
  uint8_t* v;
  float* k_side;    // q8: scales (kv_heads, slots); q4: (kv_heads, slots/group, 2, hd)
  float* v_side;    // q8: scales (kv_heads, slots); q4: (kv_heads, slots, 2)
  float* k_recent;  // q4: (kv_heads, recent_slots, head_dim)
  float* v_recent;
  // kAttention of a sink cache: the layer's RoPE frequency factors (head_dim / 2), or null.
  const float* rope_factors;
};

// A layer's cache for every sequence: sequence s's part of tensor i starts stride[i] · s bytes
// after sequence 0's (each cache tensor holds max_batch equal parts, contract/plan.h).
struct SequencedKv {
  KvView first;
  uint64_t stride[6];

  STATICLM_HD KvView Of(int32_t sequence) const {
    KvView c = first;
    const uint64_t s = static_cast<uint64_t>(sequence);
    c.k = c.k == nullptr ? nullptr : c.k + stride[0] * s;
    c.v = c.v == nullptr ? nullptr : c.v + stride[1] * s;
    c.k_side = c.k_side == nullptr ? nullptr : c.k_side + stride[2] * s / 4;
    c.v_side = c.v_side == nullptr ? nullptr : c.v_side + stride[3] * s / 4;
    c.k_recent = c.k_recent == nullptr ? nullptr : c.k_recent + stride[4] * s / 4;
    c.v_recent = c.v_recent == nullptr ? nullptr : c.v_recent + stride[5] * s / 4;
    return c;
  }
};

STATICLM_HD inline float KvPlain(DType type, const uint8_t* base, int64_t index) {
  if (type == DType::kF16) {
#if defined(__CUDA_ARCH__)
    // One 16-bit load, not two byte loads: a cache tensor starts aligned (the plan's offsets),
    // so element `index` is on a 2-byte boundary. Attention is bound by its loads.
    return cpu::HalfToFloat(reinterpret_cast<const uint16_t*>(base)[index]);
#else
    return cpu::HalfToFloat(static_cast<uint16_t>(base[index * 2] | (base[index * 2 + 1] << 8)));
#endif
  }
  return reinterpret_cast<const float*>(base)[index];
}

STATICLM_HD inline float KvNibble(const uint8_t* base, int64_t index) {
  const uint8_t byte = base[index / 2];
  return static_cast<float>(index % 2 == 0 ? (byte & 0x0F) : (byte >> 4));
}

// Key element d of position t, KV head g; step_end as ref::LoadKey.
STATICLM_HD inline float KvLoadKey(const KvView& c, int64_t step_end, int64_t t, int64_t g,
                                   int64_t d) {
  const OpParams& p = c.params;
  const int64_t hd = p.head_dim;
  if (p.kv_quant == KvQuant::kQ4 && t >= QuantizedEnd(p, step_end)) {
    return c.k_recent[(g * p.recent_slots + t % p.recent_slots) * hd + d];
  }
  const int64_t slot = KvSlot(p, t);
  const int64_t row = g * p.cache_slots + slot;
  switch (p.kv_quant) {
    case KvQuant::kNone:
      return KvPlain(c.type, c.k, row * hd + d);
    case KvQuant::kQ8:
      return static_cast<float>(reinterpret_cast<const int8_t*>(c.k)[row * hd + d]) * c.k_side[row];
    case KvQuant::kQ4: {
      const float* params =
          c.k_side + (g * (p.cache_slots / p.kv_group) + slot / p.kv_group) * 2 * hd;
      return KvNibble(c.k, row * hd + d) * params[d] + params[hd + d];
    }
  }
  return 0.0f;
}

// Value element d of position t, KV head g; as ref::LoadValue.
STATICLM_HD inline float KvLoadValue(const KvView& c, int64_t step_end, int64_t t, int64_t g,
                                     int64_t d) {
  const OpParams& p = c.params;
  const int64_t hd = p.head_dim;
  if (p.kv_quant == KvQuant::kQ4 && t >= QuantizedEnd(p, step_end)) {
    return c.v_recent[(g * p.recent_slots + t % p.recent_slots) * hd + d];
  }
  const int64_t row = g * p.cache_slots + KvSlot(p, t);
  switch (p.kv_quant) {
    case KvQuant::kNone:
      return KvPlain(c.type, c.v, row * hd + d);
    case KvQuant::kQ8:
      return static_cast<float>(reinterpret_cast<const int8_t*>(c.v)[row * hd + d]) * c.v_side[row];
    case KvQuant::kQ4:
      return KvNibble(c.v, row * hd + d) * c.v_side[row * 2] + c.v_side[row * 2 + 1];
  }
  return 0.0f;
}

// The n-th position a query attends to (n < count of AttendedSpans): the sinks, then the
// recent span.
STATICLM_HD inline int64_t AttendedPosition(const AttendedSpans& a, int64_t n) {
  return n < a.sink_end ? n : a.begin + (n - a.sink_end);
}

STATICLM_HD inline int64_t AttendedCount(const AttendedSpans& a) {
  return a.cache_position + 1;
}

}  // namespace staticlm::cuda
