// A weight row read a unit at a time — one or two 32-element blocks, laid out as in
// contract/dtype.h — with as few loads as possible: the unit is a struct of uvec4 members
// (plus a trailing word) that scalar block layout packs to exactly the blocks' bytes, so a
// unit needs 2 to 8 loads where word-by-word reading needs 5 to 17. On lavapipe every storage
// load is a loop over the SIMD lanes whatever its width, so fewer, wider loads are what make
// the matmuls faster (README, Vulkan). The words are then dequantized block by block with
// constant byte positions; the arithmetic is that of shaders/dequant.glsl.
// Needs WTYPE (a contract/dtype.h value) and GL_EXT_scalar_block_layout. Defines WUnit,
// UNIT_WORDS, UNIT_BLOCKS, unit_words() and unit_block().
#if WTYPE == 3  // Q4_1: halves d and m, then 16 bytes of nibbles
struct WUnit { uint head; uvec4 body; };
#define UNIT_WORDS 5
#define UNIT_BLOCKS 1u
#elif WTYPE == 2  // two Q4_0 blocks: half d, 16 bytes of nibbles; twice (36 bytes)
struct WUnit { uvec4 body[2]; uint tail; };
#define UNIT_WORDS 9
#define UNIT_BLOCKS 2u
#elif WTYPE == 8  // two Q8_0 blocks: half d, 32 signed bytes; twice (68 bytes)
struct WUnit { uvec4 body[4]; uint tail; };
#define UNIT_WORDS 17
#define UNIT_BLOCKS 2u
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

void unit_words(WUnit u, out uint w[UNIT_WORDS]) {
#if WTYPE == 3
  w[0] = u.head;
  [[unroll]] for (uint i = 0u; i < 4u; ++i) w[1u + i] = u.body[i];
#else
  [[unroll]] for (uint k = 0u; k < uint(UNIT_WORDS) / 4u; ++k) {
    [[unroll]] for (uint i = 0u; i < 4u; ++i) w[4u * k + i] = u.body[k][i];
  }
#if WTYPE == 2 || WTYPE == 8
  w[UNIT_WORDS - 1] = u.tail;
#endif
#endif
}

// Byte `at` of the unit (constant after unrolling, so this folds to a shift and a mask).
uint unit_byte(uint w[UNIT_WORDS], uint at) { return (w[at >> 2] >> (8u * (at & 3u))) & 255u; }

// The half at even byte `at`.
float unit_half(uint w[UNIT_WORDS], uint at) {
  uint word = w[at >> 2];
  return unpackHalf2x16((at & 2u) != 0u ? (word >> 16) : word).x;
}

// Block `b` (0 or 1) of the unit as 32 floats.
void unit_block(uint w[UNIT_WORDS], uint b, out float v[32]) {
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
