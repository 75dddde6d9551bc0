// Shared by the sampling shaders (sample_argmax.comp, sample_topk.comp): logits as order-
// preserving unsigned keys, and the layout of the small host-visible block that carries a
// sampling call's parameters in and the chosen token out.
//
// Binding 0: the io buffer (logits rows of `vocab` floats from word pc.base0; `rows` rows).
// Binding 1: the sampling block, from word pc.base1:
//   [0] row   [1] k   [2] temperature (float bits)   [3] u in [0, 1) (float bits)
//   [4] top_p (float bits; 1: off)   [5] min_p (float bits; 0: off)
//   [6] out: the token id, or SAMPLE_BAD_LOGITS / SAMPLE_ALL_NEG_INF.
// Push constants: a vocab, b rows.

#define SAMPLE_ROW 0u
#define SAMPLE_K 1u
#define SAMPLE_TEMPERATURE 2u
#define SAMPLE_U 3u
#define SAMPLE_TOP_P 4u
#define SAMPLE_MIN_P 5u
#define SAMPLE_OUT 6u

// Error codes written to SAMPLE_OUT instead of a token (as int32, read by the host).
#define SAMPLE_BAD_LOGITS 0xFFFFFFFFu   // -1: a NaN or +inf logit, which the host sampler rejects
#define SAMPLE_ALL_NEG_INF 0xFFFFFFFEu  // -2: every logit is -inf

#define NEG_INF_BITS 0xFF800000u
#define POS_INF_BITS 0x7F800000u

// Classifies by bits, not isnan(), so no compiler fast-math can fold the test away.
bool bad_logit(uint bits) {
  return (bits & 0x7FFFFFFFu) >= POS_INF_BITS && bits != NEG_INF_BITS;
}

// A key whose unsigned order is the float order: −0 and +0 get the same key (they compare
// equal on the host, so they tie and go to the lower id). Every finite value and −inf gets a
// key above 0, so 0 can pad a candidate list.
uint logit_key(uint bits) {
  if (bits == 0x80000000u) bits = 0u;
  return (bits & 0x80000000u) != 0u ? ~bits : bits | 0x80000000u;
}

float key_value(uint key) {
  return uintBitsToFloat((key & 0x80000000u) != 0u ? key & 0x7FFFFFFFu : ~key);
}

// The host sampler's order: higher logit first, then lower id.
bool ranks_before(uint key_a, uint id_a, uint key_b, uint id_b) {
  return key_a > key_b || (key_a == key_b && id_a < id_b);
}
