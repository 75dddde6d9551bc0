#version 450
// Rotates adjacent pairs of x (rows, n_heads · head_dim) in place, row r at position
// step.position + r, as backends/cpu/ref_rope.cpp does. The angles come from a table
// (position, head_dim / 2) of (cos, sin) computed on the host in double at init.
// b0 x, b1 table. Push constants: a n_heads, b head_dim.
#include "common.glsl"
layout(local_size_x = 64) in;

void main() {
  uint i = gl_GlobalInvocationID.x;
  uint pairs = pc.b / 2u;
  uint per_row = pc.a * pairs;
  uint r = i / per_row;
  if (r >= active_rows()) return;
  uint h = (i % per_row) / pairs, p = i % pairs;
  uint position = uint(step.position) + r;
  uint t = pc.base1 + (position * pairs + p) * 2u;
  float c = uintBitsToFloat(b1[t]), s = uintBitsToFloat(b1[t + 1u]);
  uint x = pc.base0 + r * pc.a * pc.b + h * pc.b + 2u * p;
  float x0 = uintBitsToFloat(b0[x]), x1 = uintBitsToFloat(b0[x + 1u]);
  b0[x] = floatBitsToUint(x0 * c - x1 * s);
  b0[x + 1u] = floatBitsToUint(x0 * s + x1 * c);
}
