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

// k_at / v_at (kv = the position's first element, d the dimension) after at_position(t, row)
// has chosen where position t's key and value are.
#if KV_TYPE == 1
void at_position(uint t, uint row, uint step_end) {}
float half_at(uint w, uint e) { return unpackHalf2x16((e & 1u) != 0u ? w >> 16 : w).x; }
float k_at(uint kv, uint d) { uint e = kv + d; return half_at(b1[pc.base1 + (e >> 1)], e); }
float v_at(uint kv, uint d) { uint e = kv + d; return half_at(b2[pc.base2 + (e >> 1)], e); }
#elif KV_TYPE == 2
#include "hadamard.glsl"
// q8: the scales are applied once per position (to the dot product and to p), not per element.
void at_position(uint t, uint row, uint step_end) {}
float i8_at(uint w, uint e) { return float(bitfieldExtract(int(w), int(8u * (e & 3u)), 8)); }
float k_at(uint kv, uint d) { uint e = kv + d; return i8_at(b1[pc.base1 + (e >> 2)], e); }
float v_at(uint kv, uint d) { uint e = kv + d; return i8_at(b2[pc.base2 + (e >> 2)], e); }
#elif KV_TYPE == 3
// q4: positions from the step's last whole group on are read from the full-precision rings
// (b6, b7; recent_slots pc.i); the others are nibbles, keys with a (scale, min) per channel
// of their group (b4), values with a (scale, min) per token (b5). kv_group is pc.h.
bool in_ring;
uint ring, key_params;
float v_scale4, v_min4;
void at_position(uint t, uint row, uint step_end) {
  uint hd = pc.c;
  in_ring = t >= step_end / pc.h * pc.h;
  ring = ((row / pc.d) * pc.i + t % pc.i) * hd;
  uint slot = row % pc.d;
  key_params = pc.base4 + ((row / pc.d) * (pc.d / pc.h) + slot / pc.h) * 2u * hd;
  v_scale4 = uintBitsToFloat(b5[pc.base5 + row * 2u]);
  v_min4 = uintBitsToFloat(b5[pc.base5 + row * 2u + 1u]);
}
float nibble_at(uint w, uint e) { return float((w >> (4u * (e & 7u))) & 15u); }
float k_at(uint kv, uint d) {
  if (in_ring) return uintBitsToFloat(b6[pc.base6 + ring + d]);
  uint e = kv + d;
  return nibble_at(b1[pc.base1 + (e >> 3)], e) * uintBitsToFloat(b4[key_params + d]) +
         uintBitsToFloat(b4[key_params + pc.c + d]);
}
float v_at(uint kv, uint d) {
  if (in_ring) return uintBitsToFloat(b7[pc.base7 + ring + d]);
  uint e = kv + d;
  return nibble_at(b2[pc.base2 + (e >> 3)], e) * v_scale4 + v_min4;
}
#else
void at_position(uint t, uint row, uint step_end) {}
float k_at(uint kv, uint d) { return uintBitsToFloat(b1[pc.base1 + kv + d]); }
float v_at(uint kv, uint d) { return uintBitsToFloat(b2[pc.base2 + kv + d]); }
#endif

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
    // Rotated by delta = cache_position − position ≤ 0, as RotateQuery in
    // backends/cpu/ref_kv_load.cpp (the host computed the row's cos and sin in double).
    uint pairs = hd / 2u;
    for (uint p = 0u; p < pairs; ++p) {
      uint t = pc.base6 + (r * pairs + p) * 2u;
      float c = uintBitsToFloat(b6[t]), sn = uintBitsToFloat(b6[t + 1u]);
      precise float y0 = q[2u * p] * c - q[2u * p + 1u] * sn;
      precise float y1 = q[2u * p] * sn + q[2u * p + 1u] * c;
      qs[2u * p] = y0;
      qs[2u * p + 1u] = y1;
    }
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
    dot_qk *= uintBitsToFloat(b4[pc.base4 + row]);
    float v_scale = uintBitsToFloat(b5[pc.base5 + row]);
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
