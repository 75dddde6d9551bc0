#version 450
// Causal attention over a Static cache, flash-decoding style: invocation (r, h, s) takes the
// s-th of n_splits equal parts of slots 0 … position + r for query head h and writes a partial
// result (running max m, sum l, unnormalised output o[head_dim]) that attention_combine
// merges. The split length follows the step's position, so work stays balanced at any length.
// b0 q (rows, n_heads · hd), b1 k cache, b2 v cache (kv_heads, capacity, hd), b3 partials.
// Push constants: a n_heads, b kv_heads, c head_dim (≤ HD), d capacity, e n_splits, fa scale.
#include "common.glsl"
layout(local_size_x = 64) in;

#if KV_F16
float k_at(uint e) { uint w = b1[pc.base1 + (e >> 1)]; return unpackHalf2x16((e & 1u) != 0u ? w >> 16 : w).x; }
float v_at(uint e) { uint w = b2[pc.base2 + (e >> 1)]; return unpackHalf2x16((e & 1u) != 0u ? w >> 16 : w).x; }
#else
float k_at(uint e) { return uintBitsToFloat(b1[pc.base1 + e]); }
float v_at(uint e) { return uintBitsToFloat(b2[pc.base2 + e]); }
#endif

void main() {
  uint i = gl_GlobalInvocationID.x;
  uint n_splits = pc.e, hd = pc.c;
  uint s = i % n_splits, h = (i / n_splits) % pc.a, r = i / (n_splits * pc.a);
  if (r >= active_rows()) return;
  uint n = uint(step.position) + r + 1u;  // slots 0 … position + r
  uint len = (n + n_splits - 1u) / n_splits;
  uint t0 = min(n, s * len), t1 = min(n, t0 + len);
  uint g = h / (pc.a / pc.b);
  float q[HD], o[HD];
  uint qi = pc.base0 + (r * pc.a + h) * hd;
  for (uint d = 0u; d < hd; ++d) {
    q[d] = uintBitsToFloat(b0[qi + d]);
    o[d] = 0.0;
  }
  float m = -1e30, l = 0.0;
  for (uint t = t0; t < t1; ++t) {
    uint kv = (g * pc.d + t) * hd;
    float dot_qk = 0.0;
    for (uint d = 0u; d < hd; ++d) dot_qk += q[d] * k_at(kv + d);
    float score = dot_qk * pc.fa;
    float m_new = max(m, score);
    float correction = exp(m - m_new), p = exp(score - m_new);
    l = l * correction + p;
    for (uint d = 0u; d < hd; ++d) o[d] = o[d] * correction + p * v_at(kv + d);
    m = m_new;
  }
  uint out_i = pc.base3 + i * (hd + 2u);
  b3[out_i] = floatBitsToUint(m);
  b3[out_i + 1u] = floatBitsToUint(l);
  for (uint d = 0u; d < hd; ++d) b3[out_i + 2u + d] = floatBitsToUint(o[d]);
}
