// The reference of the integer-activation product (matmul_int8.h states the arithmetic):
// plain loops, one output at a time, the oracle of the SIMD versions.
#include <algorithm>
#include <cfloat>
#include <cmath>

#include "backends/cpu/dequantize_k.h"
#include "backends/cpu/half.h"
#include "backends/cpu/kquant_scales.h"
#include "backends/cpu/matmul_int8.h"

namespace staticlm::cpu::ref {
namespace {

uint16_t ReadU16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}

// One block with integers in [−kMax, kMax].
template <typename T, int kMax>
void QuantizeBlock(const float* x, T* q, float* d_out, int32_t* sum_out) {
  float amax = 0.0f;
  for (int i = 0; i < kQuantBlock; ++i) amax = std::max(amax, std::fabs(x[i]));
  float d = amax / static_cast<float>(kMax);
  // Below FLT_MIN, 1 / d could overflow; such a block is zero for every practical purpose.
  if (!(d >= FLT_MIN)) d = 0.0f;
  const float id = d == 0.0f ? 0.0f : 1.0f / d;
  const float limit = static_cast<float>(kMax);
  int32_t sum = 0;
  for (int i = 0; i < kQuantBlock; ++i) {
    float v = std::nearbyint(x[i] * id);  // the default rounding: to nearest, ties to even
    v = std::min(limit, std::max(-limit, v));
    q[i] = static_cast<T>(v);
    sum += q[i];
  }
  *d_out = d;
  *sum_out = sum;
}

template <typename T, int kMax>
void QuantizeRows(const float* x, int64_t rows, int64_t n_in, void* q, float* d, int32_t* sum) {
  T* out = static_cast<T*>(q);
  const int64_t blocks = rows * (n_in / kQuantBlock);
  for (int64_t b = 0; b < blocks; ++b) {
    QuantizeBlock<T, kMax>(x + b * kQuantBlock, out + b * kQuantBlock, d + b, sum + b);
  }
}

// Q4_K: block b is sub-block b % 8 of super-block b / 8, its nibbles with dw = d · sc and
// m = −(dmin · min) (both products exact: 11 bits × 6).
void DecodeQ4KSubBlock(const uint8_t* row, int64_t b, int32_t wq[32], float* dw, float* m) {
  const uint8_t* block = row + (b / 8) * 144;
  const int unit = static_cast<int>(b % 8);
  uint8_t sc[8], mins[8];
  kquant::UnpackScalesAndMins(block + 4, sc, mins);
  *dw = HalfToFloat(ReadU16(block)) * static_cast<float>(sc[unit]);
  *m = -(HalfToFloat(ReadU16(block + 2)) * static_cast<float>(mins[unit]));
  const uint8_t* qs = block + 16 + 32 * (unit / 2);  // sub-blocks 2i, 2i + 1: low, high nibbles
  for (int i = 0; i < 32; ++i) wq[i] = (qs[i] >> (4 * (unit % 2))) & 0x0f;
}

// Q5_K: as Q4_K (176-byte super-blocks: d, dmin, 12 bytes of scales, qh[32], then the nibbles),
// with bit 4 of value i of sub-block j in bit j of qh[i].
void DecodeQ5KSubBlock(const uint8_t* row, int64_t b, int32_t wq[32], float* dw, float* m) {
  const uint8_t* block = row + (b / 8) * 176;
  const int unit = static_cast<int>(b % 8);
  uint8_t sc[8], mins[8];
  kquant::UnpackScalesAndMins(block + 4, sc, mins);
  *dw = HalfToFloat(ReadU16(block)) * static_cast<float>(sc[unit]);
  *m = -(HalfToFloat(ReadU16(block + 2)) * static_cast<float>(mins[unit]));
  const uint8_t* qh = block + 16;
  const uint8_t* qs = block + 48 + 32 * (unit / 2);  // sub-blocks 2i, 2i + 1: low, high nibbles
  for (int i = 0; i < 32; ++i) {
    wq[i] = ((qs[i] >> (4 * (unit % 2))) & 0x0f) | ((qh[i] >> unit) & 1) << 4;
  }
}

// Q6_K: block b is elements 32 (b % 8) ... + 31 of super-block b / 8 (210 bytes), with dw = d
// and the int8 scales of its two 16-value sub-blocks.
void DecodeQ6KBlock(const uint8_t* row, int64_t b, int32_t wq[32], float* dw, int32_t sub[2]) {
  const uint8_t* block = row + (b / 8) * 210;
  const int first = 32 * static_cast<int>(b % 8);
  for (int i = 0; i < 32; ++i) wq[i] = kquant::Q6KInteger(block, first + i);
  const int8_t* scales = reinterpret_cast<const int8_t*>(block + 192);
  sub[0] = scales[first / 16];
  sub[1] = scales[first / 16 + 1];
  *dw = HalfToFloat(ReadU16(block + 208));
}

// Block b of a weight row as integers wq[32] and its scales: dw, m (0 unless Q4_1, Q5_1, Q4_K,
// Q5_K)
// and the integer scales of elements 0-15 and 16-31 (1 unless Q6_K).
void DecodeIntegerBlock(DType type, const uint8_t* row, int64_t b, int32_t wq[32], float* dw,
                        float* m, int32_t sub[2]) {
  *m = 0.0f;
  sub[0] = sub[1] = 1;
  if (type == DType::kQ6_K) return DecodeQ6KBlock(row, b, wq, dw, sub);
  if (type == DType::kQ4_K) return DecodeQ4KSubBlock(row, b, wq, dw, m);
  if (type == DType::kQ5_K) return DecodeQ5KSubBlock(row, b, wq, dw, m);
  if (type == DType::kQ8_0) {
    const uint8_t* block = row + b * 34;
    *dw = HalfToFloat(ReadU16(block));
    for (int i = 0; i < 32; ++i) wq[i] = static_cast<int8_t>(block[2 + i]);
    return;
  }
  const bool has_min = type == DType::kQ4_1 || type == DType::kQ5_1;
  const bool five_bits = type == DType::kQ5_0 || type == DType::kQ5_1;
  const size_t block_bytes = GetDTypeInfo(type).block_bytes;
  const uint8_t* block = row + b * block_bytes;
  *dw = HalfToFloat(ReadU16(block));
  if (has_min) *m = HalfToFloat(ReadU16(block + 2));
  const uint8_t* after_scales = block + (has_min ? 4 : 2);
  // Q5: a 32-bit word of fifth bits (bit i for element i) precedes the nibbles.
  uint32_t qh = 0;
  if (five_bits) {
    qh = static_cast<uint32_t>(ReadU16(after_scales)) |
         static_cast<uint32_t>(ReadU16(after_scales + 2)) << 16;
  }
  const uint8_t* qs = after_scales + (five_bits ? 4 : 0);
  const int32_t offset = has_min ? 0 : (five_bits ? 16 : 8);
  for (int i = 0; i < 16; ++i) {
    const int32_t high_lo = static_cast<int32_t>((qh >> i) & 1u) << 4;
    const int32_t high_hi = static_cast<int32_t>((qh >> (i + 16)) & 1u) << 4;
    wq[i] = ((qs[i] & 0x0f) | high_lo) - offset;
    wq[i + 16] = ((qs[i] >> 4) | high_hi) - offset;
  }
}

template <typename T>
float DotRow(DType type, const uint8_t* row, const T* q, const float* d, const int32_t* sum,
             int64_t blocks) {
  float acc = 0.0f;
  for (int64_t b = 0; b < blocks; ++b) {
    int32_t wq[32];
    float dw = 0.0f, m = 0.0f;
    int32_t sub[2];
    DecodeIntegerBlock(type, row, b, wq, &dw, &m, sub);
    int32_t half_dots[2] = {0, 0};
    for (int i = 0; i < 32; ++i) half_dots[i / 16] += wq[i] * q[b * kQuantBlock + i];
    const int32_t idot = sub[0] * half_dots[0] + sub[1] * half_dots[1];
    float term = (dw * d[b]) * static_cast<float>(idot);
    if (type == DType::kQ4_1 || type == DType::kQ5_1 || type == DType::kQ4_K ||
        type == DType::kQ5_K) {
      term = term + m * (d[b] * static_cast<float>(sum[b]));
    }
    acc = acc + term;
  }
  return acc;
}

template <typename T>
void MatMulRows(DType type, const uint8_t* w, int64_t n_out, const QuantizedActivations& x,
                float* y, int64_t o_begin, int64_t o_end) {
  const uint64_t row_bytes = DTypeBytes(type, static_cast<uint64_t>(x.n_in));
  const int64_t blocks = x.n_in / kQuantBlock;
  const T* q = static_cast<const T*>(x.q);
  for (int64_t r = 0; r < x.rows; ++r) {
    for (int64_t o = o_begin; o < o_end; ++o) {
      y[r * n_out + o] = DotRow(type, w + static_cast<uint64_t>(o) * row_bytes, q + r * x.n_in,
                                x.d + r * blocks, x.sum + r * blocks, blocks);
    }
  }
}

}  // namespace

void QuantizeInt8(const float* x, int64_t rows, int64_t n_in, void* q, float* d, int32_t* sum) {
  QuantizeRows<int8_t, 127>(x, rows, n_in, q, d, sum);
}

void QuantizeInt16(const float* x, int64_t rows, int64_t n_in, void* q, float* d, int32_t* sum) {
  QuantizeRows<int16_t, 32767>(x, rows, n_in, q, d, sum);
}

void MatMulIntRange(DType type, const uint8_t* w, int64_t n_out, const QuantizedActivations& x,
                    float* y, int64_t o_begin, int64_t o_end) {
  if (!IntSupportsType(type, x.bits)) {
    // A caller's contract violation (the backend keeps f32 activations for these types):
    // NaN outputs make it loud instead of decoding the weights as the wrong type.
    for (int64_t r = 0; r < x.rows; ++r) {
      for (int64_t o = o_begin; o < o_end; ++o) y[r * n_out + o] = std::nanf("");
    }
    return;
  }
  if (x.bits == 16) {
    MatMulRows<int16_t>(type, w, n_out, x, y, o_begin, o_end);
  } else {
    MatMulRows<int8_t>(type, w, n_out, x, y, o_begin, o_end);
  }
}

}  // namespace staticlm::cpu::ref
