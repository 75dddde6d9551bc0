#version 450
// Merges attention_split's partial results: out[r, h, d] = Σ_s o_s[d] e^(m_s − M) / Σ_s l_s
// e^(m_s − M), M = max_s m_s. Empty parts have m = −1e30 and l = 0 and no o (attention_split
// does not write it): they weigh nothing and are skipped. A part with keys has l ≥ 1 (its
// largest score contributes e^0).
// b0 partials, b1 out (rows, n_heads · hd). Push constants: a n_heads, c head_dim, e n_splits.
#include "common.glsl"
layout(local_size_x = 64) in;

void main() {
  uint i = gl_GlobalInvocationID.x;
  uint hd = pc.c, n_splits = pc.e;
  uint d = i % hd, h = (i / hd) % pc.a, r = i / (hd * pc.a);
  if (r >= active_rows()) return;
  uint first = pc.base0 + (r * pc.a + h) * n_splits * (hd + 2u);
  float m = -1e30;
  for (uint s = 0u; s < n_splits; ++s) m = max(m, uintBitsToFloat(b0[first + s * (hd + 2u)]));
  float l = 0.0, o = 0.0;
  for (uint s = 0u; s < n_splits; ++s) {
    uint rec = first + s * (hd + 2u);
    float part_l = uintBitsToFloat(b0[rec + 1u]);
    if (part_l == 0.0) continue;
    float w = exp(uintBitsToFloat(b0[rec]) - m);
    l += part_l * w;
    o += uintBitsToFloat(b0[rec + 2u + d]) * w;
  }
  b1[pc.base1 + i] = floatBitsToUint(o / l);
}
