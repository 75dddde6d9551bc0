#include "backends/cpu/dequantize_k.h"

#include "backends/cpu/half.h"

namespace staticlm::cpu::kquant {
namespace {

constexpr int kSubBlocks = 8;  // Q4_K and Q5_K: 8 sub-blocks of 32

float ReadHalf(const uint8_t* p) {
  return HalfToFloat(static_cast<uint16_t>(p[0] | (p[1] << 8)));
}

// The 6-bit scale and min of sub-block s, packed in 12 bytes: the first four sub-blocks keep
// theirs in the low 6 bits of bytes 0-3 (scales) and 4-7 (mins); the last four keep their low
// 4 bits in the nibbles of bytes 8-11 and their top 2 bits in the spare top bits of bytes 0-7.
void ScaleAndMin(const uint8_t* scales, int s, int* sc, int* m) {
  if (s < 4) {
    *sc = scales[s] & 63;
    *m = scales[s + 4] & 63;
    return;
  }
  *sc = (scales[s + 4] & 15) | ((scales[s - 4] >> 6) << 4);
  *m = (scales[s + 4] >> 4) | ((scales[s] >> 6) << 4);
}

// Q4_K and Q5_K share everything but the fifth bit; qh is null for Q4_K.
void DecodeSubBlocks(const uint8_t* block, const uint8_t* qh, const uint8_t* qs, float* out) {
  const float d = ReadHalf(block);
  const float dmin = ReadHalf(block + 2);
  const uint8_t* scales = block + 4;
  for (int s = 0; s < kSubBlocks; ++s) {
    int sc = 0, m = 0;
    ScaleAndMin(scales, s, &sc, &m);
    const float scale = d * static_cast<float>(sc);
    const float offset = dmin * static_cast<float>(m);
    // Sub-blocks 2g and 2g + 1 share the 32 bytes qs[32g ...]: low nibbles, then high.
    const uint8_t* bytes = qs + 32 * (s / 2);
    const int shift = (s % 2) * 4;
    for (int k = 0; k < 32; ++k) {
      int q = (bytes[k] >> shift) & 15;
      if (qh != nullptr) q |= ((qh[k] >> s) & 1) << 4;
      out[32 * s + k] = scale * static_cast<float>(q) - offset;
    }
  }
}

}  // namespace

void DecodeQ4K(const uint8_t* block, float* out) {
  DecodeSubBlocks(block, nullptr, block + 16, out);
}

void DecodeQ5K(const uint8_t* block, float* out) {
  DecodeSubBlocks(block, block + 16, block + 48, out);
}

int Q6KInteger(const uint8_t* block, int i) {
  const uint8_t* ql = block;
  const uint8_t* qh = block + 128;
  // Each half of 128 elements reads 64 bytes of ql (low nibbles for its first 64 elements,
  // high nibbles for the next 64) and 32 bytes of qh (2 bits for each of 4 runs of 32).
  const int h = i / 128, r = i % 128;
  const int low = (ql[64 * h + r % 64] >> (r < 64 ? 0 : 4)) & 15;
  const int high = (qh[32 * h + r % 32] >> (2 * (r / 32))) & 3;
  return (low | (high << 4)) - 32;
}

void DecodeQ6K(const uint8_t* block, float* out) {
  const int8_t* scales = reinterpret_cast<const int8_t*>(block + 192);
  const float d = ReadHalf(block + 208);
  for (int i = 0; i < 256; ++i) {
    const int q = Q6KInteger(block, i);
    out[i] = (d * static_cast<float>(scales[i / 16])) * static_cast<float>(q);
  }
}

}  // namespace staticlm::cpu::kquant
