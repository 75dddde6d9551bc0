#version 450
// y (rows, n) = x / sqrt(mean(x²) + eps) · weight; one workgroup per row.
// b0 x, b1 weight, b2 y. Push constants: a n, fa eps.
#include "common.glsl"
layout(local_size_x = 64) in;
shared float sums[64];

void main() {
  uint r = gl_WorkGroupID.x;
  if (r >= active_rows()) return;
  uint t = gl_LocalInvocationID.x;
  uint x0 = pc.base0 + r * pc.a;
  float s = 0.0;
  for (uint i = t; i < pc.a; i += 64u) {
    float v = uintBitsToFloat(b0[x0 + i]);
    s += v * v;
  }
  sums[t] = s;
  barrier();
  for (uint half_n = 32u; half_n > 0u; half_n >>= 1) {
    if (t < half_n) sums[t] += sums[t + half_n];
    barrier();
  }
  float inv_rms = 1.0 / sqrt(sums[0] / float(pc.a) + pc.fa);
  for (uint i = t; i < pc.a; i += 64u) {
    float v = uintBitsToFloat(b0[x0 + i]);
    b2[pc.base2 + r * pc.a + i] =
        floatBitsToUint(v * inv_rms * uintBitsToFloat(b1[pc.base1 + i]));
  }
}
