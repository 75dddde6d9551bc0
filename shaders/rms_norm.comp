#version 450
// y = x / sqrt(mean(x²) + eps) · weight over groups of n elements: whole rows (n the width),
// or each head of a row on its own (Gemma 3's q and k norms: n the head size, b groups a row),
// as backends/cpu/ref_rms_norm.cpp. One workgroup per group; a row's groups are contiguous, so
// workgroup w normalises elements w · n … w · n + n − 1 and belongs to row w / b.
// b0 x, b1 weight (n), b2 y. Push constants: a n, b groups per row (1: whole rows), fa eps.
#include "common.glsl"
layout(local_size_x = 64) in;
shared float sums[64];

void main() {
  uint w = gl_WorkGroupID.x;
  if (w / pc.b >= active_rows()) return;
  uint t = gl_LocalInvocationID.x;
  uint x0 = pc.base0 + w * pc.a;
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
    b2[pc.base2 + w * pc.a + i] =
        floatBitsToUint(v * inv_rms * uintBitsToFloat(b1[pc.base1 + i]));
  }
}
