#version 450
// q4 (KIVI), after kv_store's ring writes: packs every group of kv_group positions the step
// completes from the full-precision rings into the 4-bit caches, as QuantizeGroup in
// backends/cpu/ref_kv_store.cpp does — keys per channel over the group's tokens, values per
// token over the head, code = round((x − min) / scale) in 0 … 15, scale = (max − min) / 15.
// Codes are nibbles (element 2i the low one of byte i), eight a word, so head_dim % 8 == 0.
// Invocation (j, g, w): the step's j-th completed group (j < e; a batched step: row j's), KV
// head g of the row's sequence (kv_policy.glsl); w < hd / 8: the key channels 8w … 8w + 7;
// else the value row of the group's token w − hd / 8.
// b2 k cache, b3 v cache (kv_heads, slots, hd), b4 k params (kv_heads, slots / group, 2, hd:
// scales, then mins), b5 v params (kv_heads, slots, 2), b6 k ring, b7 v ring (kv_heads,
// recent_slots, hd). Push constants: a kv_heads, b head_dim, c slots, e groups a step can
// complete, f policy | halves << 2 | sinks << 3, g window, h kv_group << 16, i recent_slots.
#include "common.glsl"
#include "kv_policy.glsl"
layout(local_size_x = 64) in;

uint code4(float x, float scale, float lo) {
  if (scale <= 0.0) return 0u;
  return uint(clamp(roundEven((x - lo) / scale), 0.0, 15.0));
}

float k_ring(uint g, uint t, uint d) { return uintBitsToFloat(b6[pc.base6 + (g * pc.i + t % pc.i) * pc.b + d]); }
float v_ring(uint g, uint t, uint d) { return uintBitsToFloat(b7[pc.base7 + (g * pc.i + t % pc.i) * pc.b + d]); }

void main() {
  uint i = gl_GlobalInvocationID.x;
  uint hd = pc.b, group = kv_group(), words = hd / 8u, per_head = words + group;
  uint j = i / (pc.a * per_head), g = (i / per_head) % pc.a, w = i % per_head;
  if (j >= pc.e) return;
  uint first = 0u;
  if (step.rows_are_sequences != 0) {
    // A batched step (pc.e = its rows): row j's token may complete a group of its sequence.
    if (j >= active_rows() || (row_position(j) + 1u) % group != 0u) return;
    first = row_position(j) + 1u - group;
  } else {
    uint step_end = uint(step.position) + active_rows();
    first = (uint(step.position) / group + j) * group;
    if (first + group > step_end) return;  // not completed by this step
  }
  g += (step.rows_are_sequences != 0 ? row_sequence(j) : uint(step.sequence)) * pc.a;
  uint slot0 = kv_slot(first, pc.c);     // a multiple of group: the group's slots follow it
  if (w < words) {
    float lo[8], hi[8];
    [[unroll]] for (uint c = 0u; c < 8u; ++c) {
      lo[c] = k_ring(g, first, 8u * w + c);
      hi[c] = lo[c];
    }
    for (uint t = first; t < first + group; ++t) {
      [[unroll]] for (uint c = 0u; c < 8u; ++c) {
        float x = k_ring(g, t, 8u * w + c);
        lo[c] = min(lo[c], x);
        hi[c] = max(hi[c], x);
      }
    }
    uint params = pc.base4 + (g * (pc.c / group) + slot0 / group) * 2u * hd;
    float scale[8];
    [[unroll]] for (uint c = 0u; c < 8u; ++c) {
      scale[c] = (hi[c] - lo[c]) / 15.0;
      b4[params + 8u * w + c] = floatBitsToUint(scale[c]);
      b4[params + hd + 8u * w + c] = floatBitsToUint(lo[c]);
    }
    for (uint t = first; t < first + group; ++t) {
      uint packed = 0u;
      [[unroll]] for (uint c = 0u; c < 8u; ++c) {
        packed |= code4(k_ring(g, t, 8u * w + c), scale[c], lo[c]) << (4u * c);
      }
      b2[pc.base2 + (g * pc.c + slot0 + (t - first)) * words + w] = packed;
    }
  } else {
    uint t = first + (w - words);
    float lo = v_ring(g, t, 0u), hi = lo;
    for (uint d = 0u; d < hd; ++d) {
      float x = v_ring(g, t, d);
      lo = min(lo, x);
      hi = max(hi, x);
    }
    uint row = g * pc.c + slot0 + (t - first);
    float scale = (hi - lo) / 15.0;
    b5[pc.base5 + row * 2u] = floatBitsToUint(scale);
    b5[pc.base5 + row * 2u + 1u] = floatBitsToUint(lo);
    for (uint ww = 0u; ww < words; ++ww) {
      uint packed = 0u;
      [[unroll]] for (uint c = 0u; c < 8u; ++c) {
        packed |= code4(v_ring(g, t, 8u * ww + c), scale, lo) << (4u * c);
      }
      b3[pc.base3 + row * words + ww] = packed;
    }
  }
}
