#version 450
// Greedy sampling on the device: the argmax of one logits row, ties to the lowest id, as
// Sampler::Argmax; a NaN or +inf logit, or a row of only −inf, is reported instead (the host
// sampler rejects both). One workgroup: each invocation scans a strided share of the row, then
// a tree reduction in shared memory. See sample_keys.glsl for the bindings.
#include "common.glsl"
#include "sample_keys.glsl"
#define WG 256u
layout(local_size_x = 256) in;

shared uint best_key[WG];
shared uint best_id[WG];
shared uint bad[WG];

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint vocab = pc.a;
  const uint row = min(b1[pc.base1 + SAMPLE_ROW], pc.b - 1u);
  const uint base = pc.base0 + row * vocab;
  uint key = 0u, id = 0xFFFFFFFFu, flags = 0u;
  // Ascending ids within an invocation, and a strict comparison: the first of equals stays.
  for (uint i = t; i < vocab; i += WG) {
    const uint bits = b0[base + i];
    if (bad_logit(bits)) {
      flags = 1u;
      continue;
    }
    const uint k = logit_key(bits);
    if (k > key) {
      key = k;
      id = i;
    }
  }
  best_key[t] = key;
  best_id[t] = id;
  bad[t] = flags;
  barrier();
  for (uint half_n = WG / 2u; half_n > 0u; half_n >>= 1) {
    if (t < half_n) {
      const uint o = t + half_n;
      if (ranks_before(best_key[o], best_id[o], best_key[t], best_id[t])) {
        best_key[t] = best_key[o];
        best_id[t] = best_id[o];
      }
      bad[t] |= bad[o];
    }
    barrier();
  }
  if (t == 0u) {
    uint out_token = best_id[0];
    if (bad[0] != 0u) {
      out_token = SAMPLE_BAD_LOGITS;
    } else if (best_key[0] == logit_key(NEG_INF_BITS)) {
      out_token = SAMPLE_ALL_NEG_INF;
    }
    b1[pc.base1 + SAMPLE_OUT] = out_token;
  }
}
