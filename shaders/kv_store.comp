#version 450
// Writes k and v (rows, kv_heads · head_dim) into a layer's caches (kv_heads, capacity,
// head_dim) at slot step.position + r (Static cache). KV_F16: halves packed two a word.
// b0 k, b1 v, b2 k cache, b3 v cache. Push constants: a kv_heads, b head_dim, c capacity.
#include "common.glsl"
layout(local_size_x = 64) in;

void main() {
  uint i = gl_GlobalInvocationID.x;
  uint pairs = pc.b / 2u;
  uint per_row = pc.a * pairs;
  uint r = i / per_row;
  if (r >= active_rows()) return;
  uint g = (i % per_row) / pairs, p = i % pairs;
  uint slot = uint(step.position) + r;
  uint src = r * pc.a * pc.b + g * pc.b + 2u * p;
  uint dst = (g * pc.c + slot) * pc.b + 2u * p;
  vec2 k = vec2(uintBitsToFloat(b0[pc.base0 + src]), uintBitsToFloat(b0[pc.base0 + src + 1u]));
  vec2 v = vec2(uintBitsToFloat(b1[pc.base1 + src]), uintBitsToFloat(b1[pc.base1 + src + 1u]));
#if KV_F16
  b2[pc.base2 + dst / 2u] = packHalf2x16(k);
  b3[pc.base3 + dst / 2u] = packHalf2x16(v);
#else
  b2[pc.base2 + dst] = floatBitsToUint(k.x);
  b2[pc.base2 + dst + 1u] = floatBitsToUint(k.y);
  b3[pc.base3 + dst] = floatBitsToUint(v.x);
  b3[pc.base3 + dst + 1u] = floatBitsToUint(v.y);
#endif
}
