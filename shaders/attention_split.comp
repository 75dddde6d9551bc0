#version 450
// Causal attention over one layer's cache, flash-decoding style, for every cache policy
// (kv_policy.glsl): the positions the query of row r (at row_position(r) of sequence
// row_sequence(r)) attends to — the sinks, then begin … its position — are numbered
// 0 … n − 1 and invocation (r, h, s) takes the s-th of n_splits equal parts of them for query
// head h, writing a partial result (running max m, sum l, unnormalised output o[head_dim])
// that attention_combine merges. The parts follow the row's position, so work stays balanced
// at any length. As backends/cpu/ref_attention.cpp: the sinks are scored with the query
// rotated to its position inside the cache (the step's RoPE rows), and a q8 cache
// (Hadamard-rotated rows) is read with the query rotated into its basis and the output
// rotated back.
// KV_TYPE 0 f32, 1 f16, 2 q8, 3 q4. Cache tensors hold max_batch sequences: their "kv_heads"
// below is max_batch · kv_heads. b0 q (rows, n_heads · hd), b1 k cache, b2 v cache
// (kv_heads, slots, hd), b3 partials; q8: b4 k scales, b5 v scales (kv_heads, slots); q4: b4
// k params (kv_heads, slots / group, 2, hd), b5 v params (kv_heads, slots, 2), b6 k ring, b7 v
// ring (kv_heads, recent_slots, hd); Sink: b6 the step's rows of the sinks' query rotation,
// (rows, hd / 2) × (cos, sin) of (cache_position − position) · θ_i (q4 has no Sink policy).
// Push constants: a n_heads, b kv_heads, c head_dim (≤ HD), d slots, e n_splits, f policy |
// sinks << 2, g window, h kv_group (q4), i recent_slots (q4), fa scale, fb 1/√head_dim (q8).
#include "common.glsl"
#include "kv_policy.glsl"
layout(local_size_x = 64) in;

#include "kv_read.glsl"

void main() {
  uint i = gl_GlobalInvocationID.x;
  uint n_splits = pc.e, hd = pc.c;
  uint s = i % n_splits, h = (i / n_splits) % pc.a, r = i / (n_splits * pc.a);
  if (r >= active_rows()) return;
  uint position = row_position(r);
  Attended span = kv_attended(position);
  uint n = span.cache_position + 1u;  // attended positions: sinks, then begin … position
  uint len = (n + n_splits - 1u) / n_splits;
  uint t0 = min(n, s * len), t1 = min(n, t0 + len);
  uint g = row_sequence(r) * pc.b + h / (pc.a / pc.b);  // KV head in the cache tensors
  float q[HD], qs[HD], o[HD];
  uint qi = pc.base0 + (r * pc.a + h) * hd;
  for (uint d = 0u; d < hd; ++d) {
    q[d] = uintBitsToFloat(b0[qi + d]);
    o[d] = 0.0;
  }
  if (span.sink_end > 0u && t0 < span.sink_end) {
    for (uint d = 0u; d < hd; ++d) qs[d] = q[d];
    rotate_for_sinks(qs, r, hd);
#if KV_TYPE == 2
    hadamard(qs, hd);
#endif
  }
#if KV_TYPE == 2
  hadamard(q, hd);
#endif
  uint step_end = row_step_end(r);
  float m = -1e30, l = 0.0;
  for (uint j = t0; j < t1; ++j) {
    bool sink = j < span.sink_end;
    uint t = sink ? j : span.begin + (j - span.sink_end);
    uint row = g * pc.d + kv_slot(t, pc.d);
    uint kv = row * hd;
    at_position(t, row, step_end);
    float dot_qk = 0.0;
    if (sink) {
      for (uint d = 0u; d < hd; ++d) dot_qk += qs[d] * k_at(kv, d);
    } else {
      for (uint d = 0u; d < hd; ++d) dot_qk += q[d] * k_at(kv, d);
    }
#if KV_TYPE == 2
    dot_qk *= k_scale_at(row);
    float v_scale = v_scale_at(row);
#else
    float v_scale = 1.0;
#endif
    float score = dot_qk * pc.fa;
    float m_new = max(m, score);
    float correction = exp(m - m_new), p = exp(score - m_new);
    l = l * correction + p;
    float pv = p * v_scale;
    for (uint d = 0u; d < hd; ++d) o[d] = o[d] * correction + pv * v_at(kv, d);
    m = m_new;
  }
#if KV_TYPE == 2
  hadamard(o, hd);  // linear: the merged output comes back to the plain basis too
#endif
  uint out_i = pc.base3 + i * (hd + 2u);
  b3[out_i] = floatBitsToUint(m);
  b3[out_i + 1u] = floatBitsToUint(l);
  for (uint d = 0u; d < hd; ++d) b3[out_i + 2u + d] = floatBitsToUint(o[d]);
}
