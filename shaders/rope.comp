#version 450
// Rotates pairs of x (rows, n_heads · head_dim) in place, as backends/cpu/ref_rope.cpp does:
// adjacent pairs (x[2i], x[2i + 1]) (Rope), or halves (x[i], x[i + head_dim / 2]) (RopeHalves:
// Hugging Face's rotate-half, Gemma's layout), with the same angles either way. The angles are row r's own: the host writes each step's (cos, sin) pairs, computed in
// double as the CPU does (backends/vulkan/vk_step.h), so any position works, and the products
// are `precise` (no fused multiply-add) so the rotation is bitwise the CPU's.
// Partial RoPE turns only the first rope_dims elements of each head, as a head of rope_dims
// (halves: (x[i], x[i + rope_dims / 2])); the rest are not touched.
// b0 x, b1 the step's rows (rows, rope_dims / 2) × (cos, sin), b2 a second tensor rotated by
// the same rows (queries and keys in one dispatch) or nothing. Push constants: a n_heads of
// x, b head_dim, c n_heads of the second tensor (0: none), d 1 to rotate halves, e rope_dims
// (head_dim, or less).
#include "common.glsl"
layout(local_size_x = 64) in;

void main() {
  uint i = gl_GlobalInvocationID.x;
  uint pairs = pc.e / 2u;
  uint per_row = (pc.a + pc.c) * pairs;
  uint r = i / per_row;
  if (r >= active_rows()) return;
  uint h = (i % per_row) / pairs, p = i % pairs;
  uint t = pc.base1 + (r * pairs + p) * 2u;
  float c = uintBitsToFloat(b1[t]), s = uintBitsToFloat(b1[t + 1u]);
  bool second = h >= pc.a;
  // The pair's first element and the distance to its other one.
  uint first = pc.d != 0u ? p : 2u * p, other = pc.d != 0u ? pairs : 1u;
  uint x = second ? pc.base2 + r * pc.c * pc.b + (h - pc.a) * pc.b + first
                  : pc.base0 + r * pc.a * pc.b + h * pc.b + first;
  float x0 = uintBitsToFloat(second ? b2[x] : b0[x]);
  float x1 = uintBitsToFloat(second ? b2[x + other] : b0[x + other]);
  precise float y0 = x0 * c - x1 * s;
  precise float y1 = x0 * s + x1 * c;
  if (second) {
    b2[x] = floatBitsToUint(y0);
    b2[x + other] = floatBitsToUint(y1);
  } else {
    b0[x] = floatBitsToUint(y0);
    b0[x + other] = floatBitsToUint(y1);
  }
}
