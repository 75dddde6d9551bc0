// Dequantizes chunk `chunk` (CHUNK values, shaders/weight_type.glsl) of the block at byte
// `byte_offset` of storage buffer WBUF into v[CHUNK]: the whole block for the plain and
// 32-element types (chunk is 0), 32-element sub-block `chunk` of a K-quant super-block. Included
// once per buffer with WBUF, DEQ (the function name) and DEQ_U32 / DEQ_HALF (helper names)
// defined. Block layouts are those of contract/dtype.h; the arithmetic is that of
// backends/cpu/dequantize.cpp and dequantize_k.cpp so results match the reference kernels.
// Blocks of 18, 22, 34 and 210 bytes leave every other block 2 bytes off a word boundary: their
// words are read with DEQ_U32, which joins two words there. Its read of the next word, and a
// half read at a block's end, can reach past the tensor's last byte, into the spare word the
// backend binds after every weight (backends/vulkan/vk_recorder.cpp).

// A 32-bit little-endian word at a byte offset that is a multiple of 2.
uint DEQ_U32(uint byte_offset) {
  uint i = byte_offset >> 2;
  if ((byte_offset & 2u) == 0u) return WBUF[i];
  return (WBUF[i] >> 16) | (WBUF[i + 1u] << 16);
}

float DEQ_HALF(uint byte_offset) {
  uint w = WBUF[byte_offset >> 2];
  return unpackHalf2x16((byte_offset & 2u) != 0u ? (w >> 16) : w).x;
}

#include "quant_bits.glsl"

void DEQ(uint byte_offset, uint chunk, out float v[CHUNK]) {
#if WTYPE == 0
  v[0] = uintBitsToFloat(WBUF[byte_offset >> 2]);
#elif WTYPE == 1
  v[0] = DEQ_HALF(byte_offset);
#elif WTYPE == 30
  uint w = WBUF[byte_offset >> 2];
  v[0] = uintBitsToFloat(((byte_offset & 2u) != 0u ? (w >> 16) : (w & 0xffffu)) << 16);
#elif WTYPE == 2 || WTYPE == 3
#if WTYPE == 2
  float d = DEQ_HALF(byte_offset);
  float offset = -8.0 * d;
  uint qs = byte_offset + 2u;
#else
  uint dm = WBUF[byte_offset >> 2];
  float d = unpackHalf2x16(dm).x;
  float offset = unpackHalf2x16(dm >> 16).x;
  uint qs = byte_offset + 4u;
#endif
  [[unroll]] for (uint q = 0u; q < 4u; ++q) {
#if WTYPE == 3
    // Q4_1 blocks are 20 bytes: a row that starts on a word boundary stays word aligned, so
    // the quants load without DEQ_U32's alignment test (which a SIMD device runs both ways).
    uint w = WBUF[(qs >> 2) + q];
#else
    uint w = DEQ_U32(qs + 4u * q);
#endif
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
      v[4u * q + i] = float((w >> (8u * i)) & 15u) * d + offset;
      v[16u + 4u * q + i] = float((w >> (8u * i + 4u)) & 15u) * d + offset;
    }
  }
#elif WTYPE == 6 || WTYPE == 7
  // The fifth bit of element j is bit j of qh.
#if WTYPE == 6
  vec2 dm = vec2(DEQ_HALF(byte_offset), 0.0);
  uint qh = DEQ_U32(byte_offset + 2u);
  uint qs = byte_offset + 6u;
#else
  // Q5_1 blocks are 24 bytes: word aligned when the row is, as Q4_1's.
  vec2 dm = unpackHalf2x16(WBUF[byte_offset >> 2]);
  uint qh = WBUF[(byte_offset >> 2) + 1u];
  uint qs = byte_offset + 8u;
#endif
  [[unroll]] for (uint q = 0u; q < 4u; ++q) {
#if WTYPE == 6
    uint w = DEQ_U32(qs + 4u * q);
#else
    uint w = WBUF[(qs >> 2) + q];
#endif
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
      uint j = 4u * q + i;
      vec2 values = q5_values(q5_pair(w >> (8u * i), qh, j), dm.x, dm.y);
      v[j] = values.x;
      v[16u + j] = values.y;
    }
  }
#elif WTYPE == 12 || WTYPE == 13
  // Sub-blocks 2g and 2g + 1 share the 32 bytes qs[32g ...]: low nibbles, then high. Q5_K's
  // fifth bit of element k of sub-block s is bit s of qh[k] (the 32 bytes after the scales).
  uint word = byte_offset >> 2;
  // Super-blocks of 144 and 176 bytes start on a word boundary when the row does.
  vec2 scale_offset = kquant_scale_offset(WBUF[word], WBUF[word + 1u], WBUF[word + 2u],
                                          WBUF[word + 3u], chunk);
#if WTYPE == 12
  uint qs = word + 4u + 8u * (chunk >> 1);
#else
  uint qh = word + 4u;
  uint qs = word + 12u + 8u * (chunk >> 1);
#endif
  uint shift = 4u * (chunk & 1u);
  [[unroll]] for (uint q = 0u; q < 8u; ++q) {
    uint w = WBUF[qs + q] >> shift;
#if WTYPE == 13
    uint h = WBUF[qh + q] >> chunk;
#endif
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
      uint n = (w >> (8u * i)) & 15u;
#if WTYPE == 13
      n |= ((h >> (8u * i)) & 1u) << 4;
#endif
      v[4u * q + i] = scale_offset.x * float(n) - scale_offset.y;
    }
  }
#elif WTYPE == 14
  // Q6_K: chunk c is elements 32c ... 32c + 31, in half h = c / 4 at r = 32 (c % 4) + k: the low
  // 4 bits from ql[64h + r % 64] (high nibbles for c % 4 >= 2), the top 2 from
  // qh[32h + k] >> 2 (c % 4), and the int8 scales[2c] (k < 16) and scales[2c + 1].
  uint h = chunk >> 2, c4 = chunk & 3u;
  uint ql = byte_offset + 64u * h + 32u * (c4 & 1u);
  uint qh = byte_offset + 128u + 32u * h;
  uint low_shift = 4u * (c4 >> 1), high_shift = 2u * c4;
  int scales = int(DEQ_U32(byte_offset + 192u + 2u * chunk));
  float d = DEQ_HALF(byte_offset + 208u);
  float scale0 = d * float(bitfieldExtract(scales, 0, 8));
  float scale1 = d * float(bitfieldExtract(scales, 8, 8));
  [[unroll]] for (uint q = 0u; q < 8u; ++q) {
    uint lw = DEQ_U32(ql + 4u * q) >> low_shift;
    uint hw = DEQ_U32(qh + 4u * q) >> high_shift;
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
      int n = int(((lw >> (8u * i)) & 15u) | (((hw >> (8u * i)) & 3u) << 4)) - 32;
      v[4u * q + i] = (q < 4u ? scale0 : scale1) * float(n);
    }
  }
#elif WTYPE == 8
  float d = DEQ_HALF(byte_offset);
  [[unroll]] for (uint q = 0u; q < 8u; ++q) {
    int w = int(DEQ_U32(byte_offset + 2u + 4u * q));
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
      v[4u * q + i] = float(bitfieldExtract(w, int(8u * i), 8)) * d;
    }
  }
#else
#error unknown WTYPE
#endif
}
