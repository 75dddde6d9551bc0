#version 450
// Element-wise ops over (rows, width), chosen by OP:
//   OP 0 add:       a += b                  (b0 a, b1 b)
//   OP 1 silu_mul:  gate = silu(gate) · up  (b0 gate, b1 up)
//   OP 2 take_last: y = x[n_tokens − 1]     (b0 x, b1 y; rows is 1)
//   OP 3 gelu_mul:  gate = gelu(gate) · up  (b0 gate, b1 up; GELU's tanh approximation, as
//                   backends/cpu/ref_elementwise.cpp)
//   OP 4 add_bias:  x += bias on every row  (b0 x, b1 bias of `width` values)
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
#if OP == 4
  float b = uintBitsToFloat(b1[pc.base1 + i % pc.a]);
#else
  float b = uintBitsToFloat(b1[pc.base1 + i]);
#endif
#if OP == 0 || OP == 4
  b0[pc.base0 + i] = floatBitsToUint(a + b);
#elif OP == 1
  b0[pc.base0 + i] = floatBitsToUint(a / (1.0 + exp(-a)) * b);
#else
  // tanh's argument clamped where tanh is ±1 in f32 anyway: a device may compute tanh as
  // (e^2u − 1) / (e^2u + 1), which is inf / inf beyond |u| ≈ 44.
  float u = clamp(0.7978845608028654 * (a + 0.044715 * a * a * a), -15.0, 15.0);
  b0[pc.base0 + i] = floatBitsToUint(0.5 * a * (1.0 + tanh(u)) * b);
#endif
#endif
}
