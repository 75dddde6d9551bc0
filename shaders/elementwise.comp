#version 450
// Element-wise ops over (rows, width), chosen by OP:
//   OP 0 add:       a += b                  (b0 a, b1 b)
//   OP 1 silu_mul:  gate = silu(gate) · up  (b0 gate, b1 up)
//   OP 2 take_last: y = x[n_tokens − 1]     (b0 x, b1 y; rows is 1)
// Push constants: a width.
#include "common.glsl"
layout(local_size_x = 64) in;

void main() {
  uint i = gl_GlobalInvocationID.x;
#if OP == 2
  if (i >= pc.a) return;
  uint last = uint(step.n_tokens) - 1u;
  b1[pc.base1 + i] = b0[pc.base0 + last * pc.a + i];
#else
  if (i >= active_rows() * pc.a) return;
  float a = uintBitsToFloat(b0[pc.base0 + i]);
  float b = uintBitsToFloat(b1[pc.base1 + i]);
#if OP == 0
  b0[pc.base0 + i] = floatBitsToUint(a + b);
#else
  b0[pc.base0 + i] = floatBitsToUint(a / (1.0 + exp(-a)) * b);
#endif
#endif
}
