// Bit unpacking shared by shaders/dequant.glsl and weight_units.glsl (layouts: contract/dtype.h).
// Needs WTYPE.
#ifndef QUANT_BITS_GLSL
#define QUANT_BITS_GLSL

// Q5_0 and Q5_1: the 5-bit values of elements i and i + 16 (i < 16) from byte i of the nibbles
// (low and high) and the fifth bits, bit j of qh for element j.
uvec2 q5_pair(uint nibbles, uint qh, uint i) {
  return uvec2((nibbles & 15u) | (((qh >> i) & 1u) << 4),
               ((nibbles >> 4) & 15u) | (((qh >> (i + 16u)) & 1u) << 4));
}

// The values of such a pair: (q - 16) d for Q5_0 (m unused), q d + m for Q5_1.
vec2 q5_values(uvec2 q, float d, float m) {
#if WTYPE == 6
  return vec2(ivec2(q) - 16) * d;
#else
  return vec2(q) * d + m;
#endif
}

// Q4_K and Q5_K: the scale d·sc and the offset dmin·m of sub-block s (0-7) from the first four
// words of a super-block: d and dmin (halves), then the 12 bytes of 6-bit scales and mins: s < 4
// keeps them in the low 6 bits of byte s of words 1 and 2; s >= 4 has their low 4 bits in the
// nibbles of byte s - 4 of word 3 and their top 2 bits in the top bits of byte s - 4 of words 1
// and 2.
vec2 kquant_scale_offset(uint dm_word, uint w1, uint w2, uint w3, uint s) {
  vec2 dm = unpackHalf2x16(dm_word);
  uint shift = 8u * (s & 3u);
  uint low = (w1 >> shift) & 255u, mid = (w2 >> shift) & 255u, high = (w3 >> shift) & 255u;
  uint sc = s < 4u ? low & 63u : (high & 15u) | ((low >> 6) << 4);
  uint m = s < 4u ? mid & 63u : (high >> 4) | ((mid >> 6) << 4);
  return vec2(dm.x * float(sc), dm.y * float(m));
}

#endif
