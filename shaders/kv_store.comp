#version 450
// Writes k and v (rows, kv_heads · head_dim), row r at its position and into its sequence's
// part (kv_policy.glsl: row_position, row_sequence), into a layer's caches (max_batch ·
// kv_heads, slots, head_dim) at the slot its policy gives, as backends/cpu/ref_kv_store.cpp
// does. KV_TYPE 0 f32, 1 f16 (halves two a word), 2 q8, 3 q4.
//   f32/f16/q4: an invocation per pair of elements (q4: into the full-precision rings b6, b7
//       (kv_heads, recent_slots, head_dim); kv_quantize_q4.comp packs completed groups).
//   q8: an invocation per (row, head, k or v): the head's row Hadamard-rotated, then int8
//       (four a word) with scale max|x| / 127 into the side tensors.
// b0 k, b1 v, b2 k cache, b3 v cache, b4 k scales, b5 v scales (q8; (max_batch · kv_heads,
// slots)).
// Push constants: a kv_heads, b head_dim, c slots, f policy | halves << 2 | sinks << 3, g window,
// i recent_slots (q4).
#include "common.glsl"
#include "kv_policy.glsl"
layout(local_size_x = 64) in;

#if KV_TYPE == 2
// HD: the largest head size of the variant (a define: 128, or 256 for Gemma 3): lavapipe's
// compile of the per-invocation array grows faster than its size.
#include "hadamard.glsl"

void store_q8(uint r, uint g, bool value, uint row) {
  uint hd = pc.b;
  uint src = (r * pc.a + g) * hd;
  float x[HD];
  for (uint d = 0u; d < hd; ++d) {
    x[d] = uintBitsToFloat(value ? b1[pc.base1 + src + d] : b0[pc.base0 + src + d]);
  }
  hadamard(x, hd);
  float amax = 0.0;
  for (uint d = 0u; d < hd; ++d) amax = max(amax, abs(x[d]));
  float s = amax / 127.0;
  float inv = s > 0.0 ? 1.0 / s : 0.0;
  uint word0 = row * hd / 4u;
  for (uint w = 0u; w < hd / 4u; ++w) {
    uint packed = 0u;
    for (uint i = 0u; i < 4u; ++i) {
      int q = int(clamp(roundEven(x[4u * w + i] * inv), -127.0, 127.0));
      packed |= uint(q & 0xff) << (8u * i);
    }
    if (value) {
      b3[pc.base3 + word0 + w] = packed;
    } else {
      b2[pc.base2 + word0 + w] = packed;
    }
  }
  if (value) {
    b5[pc.base5 + row] = floatBitsToUint(s);
  } else {
    b4[pc.base4 + row] = floatBitsToUint(s);
  }
}

void main() {
  uint i = gl_GlobalInvocationID.x;
  uint r = i / (2u * pc.a), g = (i / 2u) % pc.a;
  if (r >= active_rows()) return;
  uint row = (row_sequence(r) * pc.a + g) * pc.c + kv_slot(row_position(r), pc.c);
  store_q8(r, g, (i & 1u) != 0u, row);
}

#else

void main() {
  uint i = gl_GlobalInvocationID.x;
  uint pairs = pc.b / 2u;
  uint per_row = pc.a * pairs;
  uint r = i / per_row;
  if (r >= active_rows()) return;
  uint g = (i % per_row) / pairs, p = i % pairs;
  uint position = row_position(r);
  uint head = row_sequence(r) * pc.a + g;  // in the cache tensors
  uint src = r * pc.a * pc.b + g * pc.b + 2u * p;
  vec2 k = vec2(uintBitsToFloat(b0[pc.base0 + src]), uintBitsToFloat(b0[pc.base0 + src + 1u]));
  vec2 v = vec2(uintBitsToFloat(b1[pc.base1 + src]), uintBitsToFloat(b1[pc.base1 + src + 1u]));
#if KV_TYPE == 3
  // q4: into the full-precision rings, slot position mod recent_slots; kv_quantize_q4 then
  // packs the groups this step completes.
  uint ring = (head * pc.i + position % pc.i) * pc.b + 2u * p;
  b6[pc.base6 + ring] = floatBitsToUint(k.x);
  b6[pc.base6 + ring + 1u] = floatBitsToUint(k.y);
  b7[pc.base7 + ring] = floatBitsToUint(v.x);
  b7[pc.base7 + ring + 1u] = floatBitsToUint(v.y);
#elif KV_TYPE == 1
  uint dst = (head * pc.c + kv_slot(position, pc.c)) * pc.b + 2u * p;
  b2[pc.base2 + dst / 2u] = packHalf2x16(k);
  b3[pc.base3 + dst / 2u] = packHalf2x16(v);
#else
  uint dst = (head * pc.c + kv_slot(position, pc.c)) * pc.b + 2u * p;
  b2[pc.base2 + dst] = floatBitsToUint(k.x);
  b2[pc.base2 + dst + 1u] = floatBitsToUint(k.y);
  b3[pc.base3 + dst] = floatBitsToUint(v.x);
  b3[pc.base3 + dst + 1u] = floatBitsToUint(v.y);
#endif
}

#endif
