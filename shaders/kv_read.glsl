// Reading one layer's cache for the attention shaders (attention_split.comp,
// attention_tiled.comp): at_position(t, row, step_end) chooses where position t's key and value
// are (row: its row in the cache tensors, g · slots + slot; step_end: where its sequence's step
// ends), then k_at(kv, d) / v_at(kv, d) read dimension d (kv = row · head_dim, the position's
// first element). KV_TYPE 0 f32, 1 f16, 2 q8, 3 q4; bindings and push constants as
// attention_split.comp describes. q8 also brings hadamard().
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
float k_scale_at(uint row) { return uintBitsToFloat(b4[pc.base4 + row]); }
float v_scale_at(uint row) { return uintBitsToFloat(b5[pc.base5 + row]); }
#elif KV_TYPE == 3
// q4: positions from the step's last whole group on are read from the full-precision rings
// (b6, b7; recent_slots pc.i); the others are nibbles, keys with a (scale, min) per channel
// of their group (b4), values with a (scale, min) per token (b5). A Sink cache's b6 holds its
// sinks' query turn, so there both rings are read through b7: the k ring at base7, the v ring
// pc.j words after it.
bool in_ring;
uint ring, key_params;
float v_scale4, v_min4;
void at_position(uint t, uint row, uint step_end) {
  uint hd = pc.c, group = kv_group();
  in_ring = t >= step_end / group * group;
  ring = ((row / pc.d) * pc.i + t % pc.i) * hd;
  uint slot = row % pc.d;
  key_params = pc.base4 + ((row / pc.d) * (pc.d / group) + slot / group) * 2u * hd;
  v_scale4 = uintBitsToFloat(b5[pc.base5 + row * 2u]);
  v_min4 = uintBitsToFloat(b5[pc.base5 + row * 2u + 1u]);
}
float nibble_at(uint w, uint e) { return float((w >> (4u * (e & 7u))) & 15u); }
float k_at(uint kv, uint d) {
  if (in_ring) {
    return uintBitsToFloat(kv_sinks() > 0u ? b7[pc.base7 + ring + d] : b6[pc.base6 + ring + d]);
  }
  uint e = kv + d;
  return nibble_at(b1[pc.base1 + (e >> 3)], e) * uintBitsToFloat(b4[key_params + d]) +
         uintBitsToFloat(b4[key_params + pc.c + d]);
}
float v_at(uint kv, uint d) {
  if (in_ring) return uintBitsToFloat(b7[pc.base7 + (kv_sinks() > 0u ? pc.j : 0u) + ring + d]);
  uint e = kv + d;
  return nibble_at(b2[pc.base2 + (e >> 3)], e) * v_scale4 + v_min4;
}
#else
void at_position(uint t, uint row, uint step_end) {}
float k_at(uint kv, uint d) { return uintBitsToFloat(b1[pc.base1 + kv + d]); }
float v_at(uint kv, uint d) { return uintBitsToFloat(b2[pc.base2 + kv + d]); }
#endif

// The elements of a query head the sinks' turn rotates: the RoPE's width, the low half of push
// constant h on a Sink cache (the head, or its first part with partial RoPE).
uint sink_rope_dims() { return pc.h & 0xFFFFu; }

// Pair p of the query of row r rotated to its position inside the cache for scoring the
// sinks: by delta = cache_position − position ≤ 0, as RotateQuery in
// backends/cpu/ref_kv_load.cpp (the host computed the row's cos and sin in double; b6 holds
// them, (rows, rope_dims / 2) × (cos, sin)). x = (first, second) element of the pair.
vec2 rotate_pair_for_sinks(vec2 x, uint r, uint p) {
  uint t = pc.base6 + (r * (sink_rope_dims() / 2u) + p) * 2u;
  float c = uintBitsToFloat(b6[t]), sn = uintBitsToFloat(b6[t + 1u]);
  precise float y0 = x.x * c - x.y * sn;
  precise float y1 = x.x * sn + x.y * c;
  return vec2(y0, y1);
}

// The elements of pair p: (2p, 2p + 1), or (p, p + rope_dims / 2) when the model's RoPE rotates
// halves (kv_rope_halves).
uvec2 sink_pair(uint p) {
  return kv_rope_halves() ? uvec2(p, p + sink_rope_dims() / 2u) : uvec2(2u * p, 2u * p + 1u);
}

// The whole query head x[0 … hd − 1] so rotated (elements from rope_dims on stay).
void rotate_for_sinks(inout float x[HD], uint r) {
  for (uint p = 0u; p < sink_rope_dims() / 2u; ++p) {
    uvec2 e = sink_pair(p);
    vec2 y = rotate_pair_for_sinks(vec2(x[e.x], x[e.y]), r, p);
    x[e.x] = y.x;
    x[e.y] = y.y;
  }
}

// Element e of the query at b0[qi …] so rotated, read straight from b0 (no loop:
// vk_loop_budget.cpp counts the shaders' loops): pair e mod rope_dims / 2 with halves, pair
// e / 2 with adjacent pairs, itself from rope_dims on.
float sink_query_at(uint qi, uint r, uint e) {
  uint rd = sink_rope_dims();
  if (e >= rd) return uintBitsToFloat(b0[qi + e]);
  uint h2 = rd / 2u, p = kv_rope_halves() ? e % h2 : e / 2u;
  uvec2 pair = sink_pair(p);
  vec2 y = rotate_pair_for_sinks(
      vec2(uintBitsToFloat(b0[qi + pair.x]), uintBitsToFloat(b0[qi + pair.y])), r, p);
  return e == pair.x ? y.x : y.y;
}

// Elements d and d + 1 (d even) of the query at b0[qi …] so rotated: with adjacent pairs they
// are one pair (d / 2), turned once; with halves each has its own.
vec2 sink_query_pair_at(uint qi, uint r, uint d) {
  if (!kv_rope_halves() && d < sink_rope_dims()) {
    vec2 x = vec2(uintBitsToFloat(b0[qi + d]), uintBitsToFloat(b0[qi + d + 1u]));
    return rotate_pair_for_sinks(x, r, d / 2u);
  }
  return vec2(sink_query_at(qi, r, d), sink_query_at(qi, r, d + 1u));
}
