// A weight row read a unit at a time — one or two 32-element blocks, or one 256-element
// K-quant super-block, laid out as in contract/dtype.h — with as few loads as possible: the
// unit is a struct of uvec4 members (plus trailing words) that scalar block layout packs to
// exactly the blocks' bytes, so a unit needs 2 to 8 loads where word-by-word reading needs 5 to
// 17. On lavapipe every storage load is a loop over the SIMD lanes whatever its width, so fewer,
// wider loads are what make the matmuls faster (docs/vulkan.md). The words are then dequantized
// block by block with constant byte positions; the arithmetic is that of shaders/dequant.glsl.
// A unit is read in UNIT_STEPS steps of STEP_BLOCKS blocks each, so that a super-block's x
// values need not all be held at once: step t of a Q4_K or Q5_K unit is sub-blocks 2t and
// 2t + 1, which share their nibble bytes, and reads the scales, the fifth bits (Q5_K) and those
// 32 bytes. The other units are one step.
// Needs WTYPE (a contract/dtype.h value) and GL_EXT_scalar_block_layout. Defines WUnit,
// UNIT_BLOCKS, UNIT_STEPS, STEP_BLOCKS, STEP_WORDS, LOAD_STEP and step_block().
// Q6_K's unit is two 210-byte super-blocks (420 bytes, a whole number of words), read in eight
// steps of 64 values; the second super-block starts 2 bytes into a word, so its steps' words
// are joined from two loaded words each (q6k_step_words).
#if WTYPE == 3  // Q4_1: halves d and m, then 16 bytes of nibbles
struct WUnit { uint head; uvec4 body; };
#define UNIT_WORDS 5
#define UNIT_BLOCKS 1u
#elif WTYPE == 2  // two Q4_0 blocks: half d, 16 bytes of nibbles; twice (36 bytes)
struct WUnit { uvec4 body[2]; uint tail; };
#define UNIT_WORDS 9
#define UNIT_BLOCKS 2u
#elif WTYPE == 6  // two Q5_0 blocks: half d, 4 bytes of fifth bits, 16 of nibbles; twice (44)
struct WUnit { uvec4 body[2]; uvec3 tail; };
#define UNIT_WORDS 11
#define UNIT_BLOCKS 2u
#elif WTYPE == 7  // two Q5_1 blocks: halves d and m, 4 bytes of fifth bits, 16 of nibbles (48)
struct WUnit { uvec4 body[3]; };
#define UNIT_WORDS 12
#define UNIT_BLOCKS 2u
#elif WTYPE == 8  // two Q8_0 blocks: half d, 32 signed bytes; twice (68 bytes)
struct WUnit { uvec4 body[4]; uint tail; };
#define UNIT_WORDS 17
#define UNIT_BLOCKS 2u
#elif WTYPE == 12  // Q4_K: d, dmin, 12 bytes of scales; 128 bytes of nibbles (144)
struct WUnit { uvec4 head; uvec4 qs[8]; };
#define STEP_WORDS 12
#define UNIT_BLOCKS 8u
#define UNIT_STEPS 4u
#elif WTYPE == 13  // Q5_K: as Q4_K with 32 bytes of fifth bits before the nibbles (176)
struct WUnit { uvec4 head; uvec4 qh[2]; uvec4 qs[8]; };
#define STEP_WORDS 20
#define UNIT_BLOCKS 8u
#define UNIT_STEPS 4u
#elif WTYPE == 14  // two Q6_K super-blocks: ql[128], qh[64], int8 scales[16], half d; twice
struct WUnit { uvec4 body[26]; uint tail; };
#define UNIT_WORDS 105
#define STEP_WORDS 26
#define UNIT_BLOCKS 16u
#define UNIT_STEPS 8u
#elif WTYPE == 0  // 32 floats
struct WUnit { uvec4 body[8]; };
#define UNIT_WORDS 32
#define UNIT_BLOCKS 1u
#elif WTYPE == 1 || WTYPE == 30  // 32 halves or bfloat16s
struct WUnit { uvec4 body[4]; };
#define UNIT_WORDS 16
#define UNIT_BLOCKS 1u
#else
#error unknown WTYPE
#endif
#ifndef UNIT_STEPS  // one step: the whole unit
#define UNIT_STEPS 1u
#define STEP_WORDS UNIT_WORDS
#endif
#define STEP_BLOCKS (UNIT_BLOCKS / UNIT_STEPS)

#include "quant_bits.glsl"

// LOAD_STEP(units, words, i, t, w): the words of step `t` of unit `units[i]` into
// w[STEP_WORDS], each member loaded on its own so that a step loads only its bytes (K-quants:
// the scales' 4 words, Q5_K's 8 of fifth bits, then the step's 8 of nibbles; Q6_K: below; the
// rest: the unit's words in order). `words` is the same binding as a uint array (b1 for w0u,
// b4 for w1u), for the few single words Q6_K reads.
#if WTYPE == 14
// Step t of a Q6_K unit: super-block sb = t / 4, its half h = (t / 2) % 2, values 64 (t % 2) …
// + 63 of that half, which need the half's 64 bytes of ql, its 32 of qh, four scale bytes and
// d. Words: w[0 … 15] ql, w[16 … 23] qh, w[24] the scales, w[25] d in its low half.
// Super-block 1 starts at byte 210: each of its fields starts 2 bytes into a word, so the
// loaded words are joined in pairs (`join`); q0 and q1 are the first uvec4 of its ql and qh.
uint q6k_word(uvec4 l[5], uint n) { return l[n >> 2][n & 3u]; }
void q6k_step_words(uvec4 ql[5], uvec4 qh0, uvec4 qh1, uvec4 qh2, uint sc0, uint sc1,
                    uint d_word, bool join, out uint w[STEP_WORDS]) {
  uvec4 qh[5] = uvec4[5](qh0, qh1, qh2, uvec4(0u), uvec4(0u));
  [[unroll]] for (uint n = 0u; n < 16u; ++n) {
    w[n] = join ? (q6k_word(ql, n) >> 16) | (q6k_word(ql, n + 1u) << 16) : q6k_word(ql, n);
  }
  [[unroll]] for (uint n = 0u; n < 8u; ++n) {
    w[16u + n] = join ? (q6k_word(qh, n) >> 16) | (q6k_word(qh, n + 1u) << 16) : q6k_word(qh, n);
  }
  w[24] = join ? (sc0 >> 16) | (sc1 << 16) : sc0;
  w[25] = join ? d_word >> 16 : d_word;
}
// Word positions in the unit: ql at 16h (sb 0) or 52 + 16h (sb 1, then joined), qh at 32 + 8h
// or 84 + 8h, the scales at 48 + 2h + t % 2 or 100 + 2h + t % 2, d at 52 or 104 (the tail).
#define Q6K_SB(t) ((t) >> 2)
#define Q6K_H(t) (((t) >> 1) & 1u)
#define Q6K_QL(t) (Q6K_SB(t) == 0u ? 4u * Q6K_H(t) : 13u + 4u * Q6K_H(t))
#define Q6K_QH(t) (Q6K_SB(t) == 0u ? 8u + 2u * Q6K_H(t) : 21u + 2u * Q6K_H(t))
#define Q6K_SC(t) ((Q6K_SB(t) == 0u ? 48u : 100u) + 2u * Q6K_H(t) + ((t) & 1u))
#define LOAD_STEP(units, words, i, t, w)                                                    \
  {                                                                                         \
    uint ql_at = Q6K_QL(t), qh_at = Q6K_QH(t), sc_at = (i) * uint(UNIT_WORDS) + Q6K_SC(t);  \
    uvec4 ql_words[5] = uvec4[5](units[i].body[ql_at], units[i].body[ql_at + 1u],           \
                                 units[i].body[ql_at + 2u], units[i].body[ql_at + 3u],      \
                                 units[i].body[ql_at + 4u]);                                \
    q6k_step_words(ql_words, units[i].body[qh_at], units[i].body[qh_at + 1u],               \
                   units[i].body[qh_at + 2u], words[sc_at], words[sc_at + 1u],              \
                   words[(i) * uint(UNIT_WORDS) + (Q6K_SB(t) == 0u ? 52u : 104u)],        \
                   Q6K_SB(t) != 0u, w);                                                     \
  }
#elif WTYPE == 12 || WTYPE == 13
void kquant_step_words(uvec4 head, uvec4 qh0, uvec4 qh1, uvec4 qs0, uvec4 qs1,
                       out uint w[STEP_WORDS]) {
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    w[i] = head[i];
#if WTYPE == 13
    w[4u + i] = qh0[i];
    w[8u + i] = qh1[i];
#endif
    w[STEP_WORDS - 8 + i] = qs0[i];
    w[STEP_WORDS - 4 + i] = qs1[i];
  }
}
#if WTYPE == 12
#define LOAD_STEP(units, words, i, t, w) \
  kquant_step_words(units[i].head, uvec4(0u), uvec4(0u), units[i].qs[2u * (t)], \
                    units[i].qs[2u * (t) + 1u], w)
#else
#define LOAD_STEP(units, words, i, t, w) \
  kquant_step_words(units[i].head, units[i].qh[0], units[i].qh[1], units[i].qs[2u * (t)], \
                    units[i].qs[2u * (t) + 1u], w)
#endif
#else
void unit_words(WUnit u, out uint w[STEP_WORDS]) {
#if WTYPE == 3
  w[0] = u.head;
  [[unroll]] for (uint i = 0u; i < 4u; ++i) w[1u + i] = u.body[i];
#else
  [[unroll]] for (uint k = 0u; k < uint(UNIT_WORDS) / 4u; ++k) {
    [[unroll]] for (uint i = 0u; i < 4u; ++i) w[4u * k + i] = u.body[k][i];
  }
#if WTYPE == 2 || WTYPE == 8
  w[UNIT_WORDS - 1] = u.tail;
#elif WTYPE == 6
  [[unroll]] for (uint i = 0u; i < 3u; ++i) w[8u + i] = u.tail[i];
#endif
#endif
}
#define LOAD_STEP(units, words, i, t, w) unit_words(units[i], w)
#endif

// Byte `at` of the words (constant after unrolling, so this folds to a shift and a mask).
uint unit_byte(uint w[STEP_WORDS], uint at) { return (w[at >> 2] >> (8u * (at & 3u))) & 255u; }

// The half at even byte `at`.
float unit_half(uint w[STEP_WORDS], uint at) {
  uint word = w[at >> 2];
  return unpackHalf2x16((at & 2u) != 0u ? (word >> 16) : word).x;
}

// The 32-bit word at even byte `at`.
uint unit_u32(uint w[STEP_WORDS], uint at) {
  uint i = at >> 2;
  return (at & 2u) == 0u ? w[i] : (w[i] >> 16) | (w[i + 1u] << 16);
}

// Block `b` (below STEP_BLOCKS) of step `t`, as 32 floats.
void step_block(uint w[STEP_WORDS], uint t, uint b, out float v[32]) {
#if WTYPE == 3
  vec2 dm = unpackHalf2x16(w[0]);
  [[unroll]] for (uint i = 0u; i < 16u; ++i) {
    uint q = unit_byte(w, 4u + i);
    v[i] = float(q & 15u) * dm.x + dm.y;
    v[16u + i] = float(q >> 4) * dm.x + dm.y;
  }
#elif WTYPE == 2
  uint at = 18u * b;
  float d = unit_half(w, at);
  float offset = -8.0 * d;
  [[unroll]] for (uint i = 0u; i < 16u; ++i) {
    uint q = unit_byte(w, at + 2u + i);
    v[i] = float(q & 15u) * d + offset;
    v[16u + i] = float(q >> 4) * d + offset;
  }
#elif WTYPE == 6 || WTYPE == 7
#if WTYPE == 6
  uint at = 22u * b;
  vec2 dm = vec2(unit_half(w, at), 0.0);
  uint qh = unit_u32(w, at + 2u);
  uint qs = at + 6u;
#else
  uint at = 24u * b;
  vec2 dm = unpackHalf2x16(w[at >> 2]);
  uint qh = w[(at >> 2) + 1u];
  uint qs = at + 8u;
#endif
  [[unroll]] for (uint i = 0u; i < 16u; ++i) {
    vec2 values = q5_values(q5_pair(unit_byte(w, qs + i), qh, i), dm.x, dm.y);
    v[i] = values.x;
    v[16u + i] = values.y;
  }
#elif WTYPE == 12 || WTYPE == 13
  uint s = 2u * t + b;
  vec2 scale_offset = kquant_scale_offset(w[0], w[1], w[2], w[3], s);
  uint qs = STEP_WORDS - 8;
  [[unroll]] for (uint i = 0u; i < 32u; ++i) {
    uint q = (unit_byte(w, 4u * uint(qs) + i) >> (4u * b)) & 15u;
#if WTYPE == 13
    q |= ((unit_byte(w, 16u + i) >> s) & 1u) << 4;
#endif
    v[i] = scale_offset.x * float(q) - scale_offset.y;
  }
#elif WTYPE == 14
  // Block b of step t is chunk c4 = 2 (t % 2) + b of its half (shaders/dequant.glsl's Q6_K):
  // ql bytes 32b … (nibble 4 (t % 2)), qh bytes 0 … 31 (bits 2 c4), scales bytes 2b, 2b + 1.
  uint c4 = 2u * (t & 1u) + b;
  uint low_shift = 4u * (t & 1u), high_shift = 2u * c4;
  int scales = int(w[24]);
  float d = unpackHalf2x16(w[25]).x;
  float scale0 = d * float(bitfieldExtract(scales, int(16u * b), 8));
  float scale1 = d * float(bitfieldExtract(scales, int(16u * b + 8u), 8));
  [[unroll]] for (uint q = 0u; q < 8u; ++q) {
    uint lw = w[8u * b + q] >> low_shift;
    uint hw = w[16u + q] >> high_shift;
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
      int n = int(((lw >> (8u * i)) & 15u) | (((hw >> (8u * i)) & 3u) << 4)) - 32;
      v[4u * q + i] = (q < 4u ? scale0 : scale1) * float(n);
    }
  }
#elif WTYPE == 8
  uint at = 34u * b;
  float d = unit_half(w, at);
  [[unroll]] for (uint i = 0u; i < 32u; ++i) {
    v[i] = float(bitfieldExtract(int(unit_byte(w, at + 2u + i)), 0, 8)) * d;
  }
#elif WTYPE == 0
  [[unroll]] for (uint i = 0u; i < 32u; ++i) v[i] = uintBitsToFloat(w[i]);
#elif WTYPE == 1
  [[unroll]] for (uint i = 0u; i < 16u; ++i) {
    vec2 h = unpackHalf2x16(w[i]);
    v[2u * i] = h.x;
    v[2u * i + 1u] = h.y;
  }
#else
  [[unroll]] for (uint i = 0u; i < 16u; ++i) {
    v[2u * i] = uintBitsToFloat(w[i] << 16);
    v[2u * i + 1u] = uintBitsToFloat(w[i] & 0xffff0000u);
  }
#endif
}
