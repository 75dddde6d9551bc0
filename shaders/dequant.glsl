// Dequantizes one block of a weight row held in storage buffer WBUF into v[QK]. Included once
// per buffer with WBUF, DEQ (the function name) and DEQ_U32 / DEQ_HALF (helper names) defined.
// Block layouts are those of contract/dtype.h; the arithmetic is that of
// backends/cpu/dequantize.cpp so results match the reference kernels.

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

void DEQ(uint byte_offset, out float v[QK]) {
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
