// The per-element arithmetic of the CUDA kernels, host and device (STATICLM_HD), so that
// tests/cuda_math_test.cpp checks it against the CPU reference kernels without a GPU: the
// activations, the RoPE angle, the online-softmax merge of partial attention results and the
// q4 KV code. Each mirrors its reference's f32 operations in the reference's order.
#pragma once

#include <cmath>
#include <cstdint>

#include "contract/hd.h"

namespace staticlm::cuda {

// silu(gate) · up, as ref::SiluMul.
STATICLM_HD inline float SiluMulValue(float gate, float up) {
  return gate / (1.0f + expf(-gate)) * up;
}

// gelu(gate) · up with GELU's tanh approximation, as ref::GeluMul.
STATICLM_HD inline float GeluMulValue(float gate, float up) {
  const float k = 0.7978845608028654f;  // sqrt(2/π)
  return 0.5f * gate * (1.0f + tanhf(k * (gate + 0.044715f * gate * gate * gate))) * up;
}

// RoPE's cos and sin of pair i at `position`, as ref::RopeScaled: the angle in double, then
// cos and sin rounded to f32 and multiplied by `scale`. `factor` 1 when there are no factors.
STATICLM_HD inline void RopeCosSin(double position, int64_t i, int64_t head_dim, float base,
                                   float factor, float scale, float* c, float* s) {
  double inv_freq =
      pow(static_cast<double>(base), -2.0 * static_cast<double>(i) / static_cast<double>(head_dim));
  inv_freq /= static_cast<double>(factor);
  *c = static_cast<float>(cos(position * inv_freq)) * scale;
  *s = static_cast<float>(sin(position * inv_freq)) * scale;
}

// The elements of each head a layer's RoPE turns: OpParams::rope_dims, or the whole head (as
// contract/plan.h's RopeDims, here for device code).
STATICLM_HD inline int64_t RopeDimsOf(const OpParams& p) {
  return p.rope_dims > 0 ? p.rope_dims : p.head_dim;
}

// Part i (0 ≤ i < head_dim / 2) of a query head q turned by `delta` positions into out: how
// attention scores a Sink cache's sinks from the query's position inside the cache, as
// ref::RotateQuery with the attention op's params. Below RopeDimsOf(p) / 2, i is a RoPE pair:
// (2i, 2i + 1), or (i, i + rope_dims / 2) when p.rope_halves; `factors`: the layer's RoPE
// frequency factors, or null. From there on (partial RoPE) it is two elements past rope_dims,
// which pass through.
STATICLM_HD inline void RotateQueryPair(const float* q, int64_t i, const OpParams& p, int64_t delta,
                                        const float* factors, float* out) {
  const int64_t rope_dims = RopeDimsOf(p), half = rope_dims / 2;
  if (i >= half) {
    const int64_t e = rope_dims + 2 * (i - half);
    out[e] = q[e];
    out[e + 1] = q[e + 1];
    return;
  }
  float c = 0.0f, s = 0.0f;
  const float factor = factors != nullptr ? factors[i] : 1.0f;
  RopeCosSin(static_cast<double>(delta), i, rope_dims, p.rope_base, factor, 1.0f, &c, &s);
  const int64_t a = p.rope_halves ? i : 2 * i, b = a + (p.rope_halves ? half : 1);
  out[a] = q[a] * c - q[b] * s;
  out[b] = q[a] * s + q[b] * c;
}

// A partial softmax-weighted sum over some of a query's scores (flash attention): the largest
// score seen, Σ e^(score − max), and (kept by the caller) Σ e^(score − max) · v.
struct SoftmaxPartial {
  float max;  // −inf when empty
  float sum;
};

// Merges partial b into a: returns the factors that a's and b's value sums are multiplied by
// before they are added. An empty side (sum 0) gets factor 0.
STATICLM_HD inline void MergeSoftmax(SoftmaxPartial* a, SoftmaxPartial b, float* factor_a,
                                     float* factor_b) {
  if (b.sum == 0.0f) {
    *factor_a = 1.0f;
    *factor_b = 0.0f;
    return;
  }
  if (a->sum == 0.0f) {
    *a = b;
    *factor_a = 0.0f;
    *factor_b = 1.0f;
    return;
  }
  const float m = a->max > b.max ? a->max : b.max;
  *factor_a = expf(a->max - m);
  *factor_b = expf(b.max - m);
  a->sum = a->sum * *factor_a + b.sum * *factor_b;
  a->max = m;
}

// q4 KV code of x (0 … 15) with value = code · scale + min, as the reference KvStore's.
STATICLM_HD inline uint8_t KvCode4(float x, float scale, float min) {
  if (scale <= 0.0f) return 0;
  float r = nearbyintf((x - min) / scale);
  return static_cast<uint8_t>(r < 0.0f ? 0.0f : (r > 15.0f ? 15.0f : r));
}

// q8 KV code of x given 1/scale, as the reference KvStore's (symmetric, ±127).
STATICLM_HD inline int8_t KvCode8(float x, float inverse_scale) {
  float r = nearbyintf(x * inverse_scale);
  return static_cast<int8_t>(r > 127.0f ? 127.0f : (r < -127.0f ? -127.0f : r));
}

}  // namespace staticlm::cuda
