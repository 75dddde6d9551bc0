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
// (rows, rope_dims / 2) × (cos, sin) of (cache_position − position) · θ_i; a q4 Sink cache
// reads both rings through b7 (the k ring at base7, the v ring j words after it).
// Push constants: a n_heads, b kv_heads, c head_dim (≤ HD), d slots, e n_splits, f policy |
// halves << 2 | sinks << 3, g window, h the RoPE's width (Sink) | kv_group << 16 (q4),
// i recent_slots (q4), j the v ring's offset from the k ring's (q4 Sink), fa scale.
#include "common.glsl"
#include "kv_policy.glsl"
layout(local_size_x = 64) in;

#include "kv_read.glsl"
#define HD4 (HD / 4)

// The query (q), the query rotated for the sinks (qs) and the output (o) of one invocation, as
// vec4s HD wide (zero past head_dim): lavapipe compiles per-invocation float arrays indexed in
// loops into code that grows faster than HD (a minute at 256), vec4s into much less.
vec4 q[HD4], qs[HD4], o[HD4];

// Loads q (and qs when `sinks`) of the query at b0[qi …]; q8: both into its Hadamard basis.
void load_query(uint qi, uint r, bool sinks) {
  uint hd = pc.c;
#if KV_TYPE == 2
  float x[HD], xs[HD];
  for (uint d = 0u; d < hd; ++d) x[d] = uintBitsToFloat(b0[qi + d]);
  if (sinks) {
    for (uint d = 0u; d < hd; ++d) xs[d] = x[d];
    rotate_for_sinks(xs, r);
    hadamard(xs, hd);
  }
  hadamard(x, hd);
  for (uint i = 0u; i < HD4; ++i) {
    uint d = 4u * i;
    q[i] = d < hd ? vec4(x[d], x[d + 1u], d + 2u < hd ? x[d + 2u] : 0.0, d + 2u < hd ? x[d + 3u] : 0.0)
                  : vec4(0.0);
    qs[i] = !sinks || d >= hd ? vec4(0.0)
                              : vec4(xs[d], xs[d + 1u], d + 2u < hd ? xs[d + 2u] : 0.0,
                                     d + 2u < hd ? xs[d + 3u] : 0.0);
    o[i] = vec4(0.0);
  }
#else
  for (uint i = 0u; i < HD4; ++i) {
    uint d = 4u * i;
    vec4 x = vec4(0.0), xs = vec4(0.0);
    if (d < hd) {  // head_dim is even: whole pairs
      x.xy = vec2(uintBitsToFloat(b0[qi + d]), uintBitsToFloat(b0[qi + d + 1u]));
      if (sinks) xs.xy = sink_query_pair_at(qi, r, d);
    }
    if (d + 2u < hd) {
      x.zw = vec2(uintBitsToFloat(b0[qi + d + 2u]), uintBitsToFloat(b0[qi + d + 3u]));
      if (sinks) xs.zw = sink_query_pair_at(qi, r, d + 2u);
    }
    q[i] = x;
    qs[i] = xs;
    o[i] = vec4(0.0);
  }
#endif
}

// The dot product of a query (q or qs) with the key at kv, summed in the order of the
// elements, as the reference.
float dot_query(vec4 x[HD4], uint kv) {
  uint hd = pc.c;
  float dot_qk = 0.0;
  for (uint i = 0u; i < HD4; ++i) {
    uint d = 4u * i;
    if (d >= hd) break;
    dot_qk += x[i].x * k_at(kv, d);
    dot_qk += x[i].y * k_at(kv, d + 1u);
    if (d + 2u < hd) {
      dot_qk += x[i].z * k_at(kv, d + 2u);
      dot_qk += x[i].w * k_at(kv, d + 3u);
    }
  }
  return dot_qk;
}

// o (unnormalised) to b3[at …]; q8: back from its Hadamard basis first (linear: the merged
// output comes back to the plain basis too).
void store_output(uint at) {
  uint hd = pc.c;
#if KV_TYPE == 2
  float y[HD];
  for (uint i = 0u; i < HD4; ++i) {
    y[4u * i] = o[i].x;
    y[4u * i + 1u] = o[i].y;
    y[4u * i + 2u] = o[i].z;
    y[4u * i + 3u] = o[i].w;
  }
  hadamard(y, hd);
  for (uint d = 0u; d < hd; ++d) b3[at + d] = floatBitsToUint(y[d]);
#else
  for (uint i = 0u; i < HD4; ++i) {
    uint d = 4u * i;
    if (d >= hd) break;
    b3[at + d] = floatBitsToUint(o[i].x);
    b3[at + d + 1u] = floatBitsToUint(o[i].y);
    if (d + 2u < hd) {
      b3[at + d + 2u] = floatBitsToUint(o[i].z);
      b3[at + d + 3u] = floatBitsToUint(o[i].w);
    }
  }
#endif
}

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
  uint out_i = pc.base3 + i * (hd + 2u);
  if (t0 >= t1) {
    // An empty part (short spans leave most of the parts so): only its weight, m = −1e30 and
    // l = 0, which attention_combine skips without reading o. Loading the query and storing a
    // zero o cost every part ~2 head_dim loads and stores, ~0.5 ms a layer on lavapipe at any
    // depth (docs/vulkan.md).
    b3[out_i] = floatBitsToUint(-1e30);
    b3[out_i + 1u] = floatBitsToUint(0.0);
    return;
  }
  uint g = row_sequence(r) * pc.b + h / (pc.a / pc.b);  // KV head in the cache tensors
  uint qi = pc.base0 + (r * pc.a + h) * hd;
  bool sinks = span.sink_end > 0u && t0 < span.sink_end;
  load_query(qi, r, sinks);
  uint step_end = row_step_end(r);
  float m = -1e30, l = 0.0;
  for (uint j = t0; j < t1; ++j) {
    bool sink = j < span.sink_end;
    uint t = sink ? j : span.begin + (j - span.sink_end);
    uint row = g * pc.d + kv_slot(t, pc.d);
    uint kv = row * hd;
    at_position(t, row, step_end);
    float dot_qk = sink ? dot_query(qs, kv) : dot_query(q, kv);
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
    for (uint e = 0u; e < HD4; ++e) {
      uint d = 4u * e;
      if (d >= hd) break;
      vec4 v = vec4(v_at(kv, d), v_at(kv, d + 1u), 0.0, 0.0);
      if (d + 2u < hd) v.zw = vec2(v_at(kv, d + 2u), v_at(kv, d + 3u));
      o[e] = o[e] * correction + pv * v;
    }
    m = m_new;
  }
  b3[out_i] = floatBitsToUint(m);
  b3[out_i + 1u] = floatBitsToUint(l);
  store_output(out_i + 2u);
}
