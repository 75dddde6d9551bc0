// NEON (Advanced SIMD) matmul kernels for arm64, where NEON is mandatory. Tested here by
// cross-compiling the kernel tests and running them under qemu (scripts/test-arm64).
//
// Vectors are 4 floats: lane l of output (o, r)'s accumulator sums the products of the
// elements whose index is l mod 4, in order; the four lanes are added pairwise at the end.
// Each output has its own accumulator, so the bits do not depend on the tile shape.
#include "backends/cpu/matmul_impls.h"

#if defined(__aarch64__)

#include <arm_neon.h>

#include <cstring>

#include "backends/cpu/kquant_scales.h"
#include "backends/cpu/matmul_tiles.h"
#include "backends/cpu/reference_kernels.h"

namespace staticlm::cpu::detail {
namespace {

using tiles::TileArgs;

float LoadHalf(const uint8_t* p) {
  __fp16 h;
  std::memcpy(&h, p, sizeof(h));
  return static_cast<float>(h);
}

// The 16 low nibbles or high nibbles of a Q4 block, as four vectors of floats q, mapped to
// q · d + offset with one rounding (q · d is exact), as the reference decodes them.
inline void DecodeNibbleHalf(uint8x16_t nibbles, float32x4_t d, float32x4_t offset,
                             float32x4_t out[4]) {
  uint16x8_t lo = vmovl_u8(vget_low_u8(nibbles));
  uint16x8_t hi = vmovl_u8(vget_high_u8(nibbles));
  out[0] = vfmaq_f32(offset, vcvtq_f32_u32(vmovl_u16(vget_low_u16(lo))), d);
  out[1] = vfmaq_f32(offset, vcvtq_f32_u32(vmovl_u16(vget_high_u16(lo))), d);
  out[2] = vfmaq_f32(offset, vcvtq_f32_u32(vmovl_u16(vget_low_u16(hi))), d);
  out[3] = vfmaq_f32(offset, vcvtq_f32_u32(vmovl_u16(vget_high_u16(hi))), d);
}

// Quantized blocks decode in units of 32 elements, 8 vectors (elements 0-15 then 16-31): a
// whole block, or one of the kUnits sub-blocks of a K-quant super-block (Decode's `unit`).
struct Q4_0Block {
  static constexpr int kUnits = 1;
  static constexpr size_t kBytes = 18;
  static void Decode(const uint8_t* block, int, float32x4_t out[8]) {
    float d = LoadHalf(block);
    uint8x16_t qs = vld1q_u8(block + 2);
    float32x4_t dv = vdupq_n_f32(d), offset = vdupq_n_f32(-8.0f * d);
    DecodeNibbleHalf(vandq_u8(qs, vdupq_n_u8(0x0f)), dv, offset, out);
    DecodeNibbleHalf(vshrq_n_u8(qs, 4), dv, offset, out + 4);
  }
};

struct Q4_1Block {
  static constexpr int kUnits = 1;
  static constexpr size_t kBytes = 20;
  static void Decode(const uint8_t* block, int, float32x4_t out[8]) {
    float32x4_t dv = vdupq_n_f32(LoadHalf(block)), offset = vdupq_n_f32(LoadHalf(block + 2));
    uint8x16_t qs = vld1q_u8(block + 4);
    DecodeNibbleHalf(vandq_u8(qs, vdupq_n_u8(0x0f)), dv, offset, out);
    DecodeNibbleHalf(vshrq_n_u8(qs, 4), dv, offset, out + 4);
  }
};

struct Q8_0Block {
  static constexpr int kUnits = 1;
  static constexpr size_t kBytes = 34;
  static void Decode(const uint8_t* block, int, float32x4_t out[8]) {
    float32x4_t d = vdupq_n_f32(LoadHalf(block));
    for (int half = 0; half < 2; ++half) {
      int8x16_t q = vld1q_s8(reinterpret_cast<const int8_t*>(block + 2 + 16 * half));
      int16x8_t lo = vmovl_s8(vget_low_s8(q));
      int16x8_t hi = vmovl_s8(vget_high_s8(q));
      float32x4_t* o = out + 4 * half;
      o[0] = vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo))), d);
      o[1] = vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_high_s16(lo))), d);
      o[2] = vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi))), d);
      o[3] = vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_high_s16(hi))), d);
    }
  }
};

// Q5 blocks: the nibbles plus a fifth bit from qh (bit j for element j). q · d is exact (5 bits
// × 11), so q · d + offset rounds once, as the reference: for Q5_0 the offset −16·d makes it
// (q − 16) · d, exact.
inline void DecodeFiveBits(const uint8_t* qh_bytes, const uint8_t* qs_bytes, float d, float offset,
                           float32x4_t out[8]) {
  uint32_t qh;
  std::memcpy(&qh, qh_bytes, sizeof(qh));
  // Byte lane l of a half tests bit l % 8 of qh's byte for its 8 elements.
  const uint8x16_t bit = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  const uint8x16_t sixteen = vdupq_n_u8(16);
  const uint8x16_t qs = vld1q_u8(qs_bytes);
  const float32x4_t dv = vdupq_n_f32(d), ov = vdupq_n_f32(offset);
  for (int half = 0; half < 2; ++half) {
    uint8x16_t bytes = vcombine_u8(vdup_n_u8(static_cast<uint8_t>(qh >> (16 * half))),
                                   vdup_n_u8(static_cast<uint8_t>(qh >> (16 * half + 8))));
    uint8x16_t nibbles = half == 0 ? vandq_u8(qs, vdupq_n_u8(0x0f)) : vshrq_n_u8(qs, 4);
    uint8x16_t q = vorrq_u8(nibbles, vandq_u8(vtstq_u8(bytes, bit), sixteen));
    DecodeNibbleHalf(q, dv, ov, out + 4 * half);
  }
}

struct Q5_0Block {
  static constexpr int kUnits = 1;
  static constexpr size_t kBytes = 22;
  static void Decode(const uint8_t* block, int, float32x4_t out[8]) {
    const float d = LoadHalf(block);
    DecodeFiveBits(block + 2, block + 6, d, -16.0f * d, out);
  }
};

struct Q5_1Block {
  static constexpr int kUnits = 1;
  static constexpr size_t kBytes = 24;
  static void Decode(const uint8_t* block, int, float32x4_t out[8]) {
    DecodeFiveBits(block + 4, block + 8, LoadHalf(block), LoadHalf(block + 2), out);
  }
};

// K-quants: a super-block of 256 is 8 units of 32, its sub-blocks.
constexpr int kSubBlocks = 8;

// Q4_K and Q5_K: the scale d · sc and the offset −(dmin · m) of sub-block `unit`, each the
// reference's one rounded product (the negation is exact, and keeps the sign of a zero).
inline void SubBlockScale(const uint8_t* block, int unit, float32x4_t* scale, float32x4_t* offset) {
  uint8_t sc[8], m[8];
  kquant::UnpackScalesAndMins(block + 4, sc, m);
  *scale = vdupq_n_f32(LoadHalf(block) * static_cast<float>(sc[unit]));
  *offset = vdupq_n_f32(-(LoadHalf(block + 2) * static_cast<float>(m[unit])));
}

// The 4-bit values of sub-block `unit` in two halves of 16: sub-blocks 2g and 2g + 1 share 32
// bytes of qs, low nibbles then high.
inline void SubBlockNibbles(const uint8_t* qs, int unit, uint8x16_t q[2]) {
  const int8x16_t shift = vdupq_n_s8(static_cast<int8_t>(-4 * (unit % 2)));  // right shift
  for (int half = 0; half < 2; ++half) {
    uint8x16_t bytes = vld1q_u8(qs + 32 * (unit / 2) + 16 * half);
    q[half] = vandq_u8(vshlq_u8(bytes, shift), vdupq_n_u8(0x0f));
  }
}

// value = (d · sc) · q − dmin · m: (d · sc) · q is exact (17 bits × 5), so the fused
// multiply-add rounds once, as the reference's subtraction does.
struct Q4_KBlock {
  static constexpr int kUnits = kSubBlocks;
  static constexpr size_t kBytes = 144;
  static void Decode(const uint8_t* block, int unit, float32x4_t out[8]) {
    float32x4_t scale, offset;
    SubBlockScale(block, unit, &scale, &offset);
    uint8x16_t q[2];
    SubBlockNibbles(block + 16, unit, q);
    DecodeNibbleHalf(q[0], scale, offset, out);
    DecodeNibbleHalf(q[1], scale, offset, out + 4);
  }
};

struct Q5_KBlock {
  static constexpr int kUnits = kSubBlocks;
  static constexpr size_t kBytes = 176;
  // Element k's fifth bit is bit `unit` of qh[k].
  static void Decode(const uint8_t* block, int unit, float32x4_t out[8]) {
    float32x4_t scale, offset;
    SubBlockScale(block, unit, &scale, &offset);
    uint8x16_t q[2];
    SubBlockNibbles(block + 48, unit, q);
    const uint8x16_t bit = vdupq_n_u8(static_cast<uint8_t>(1 << unit));
    for (int half = 0; half < 2; ++half) {
      uint8x16_t qh = vld1q_u8(block + 16 + 16 * half);
      q[half] = vorrq_u8(q[half], vandq_u8(vtstq_u8(qh, bit), vdupq_n_u8(16)));
      DecodeNibbleHalf(q[half], scale, offset, out + 4 * half);
    }
  }
};

// Q6_K: unit u is elements 32(u % 4) ... of half u / 4: the low 4 bits are the low (u % 4 < 2)
// or high nibbles of 32 bytes of the half's ql, the high 2 bits are bits 2(u % 4) of its qh;
// its two runs of 16 have scales 2u and 2u + 1. value = (d · scale) · (q − 32).
struct Q6_KBlock {
  static constexpr int kUnits = kSubBlocks;
  static constexpr size_t kBytes = 210;
  static void Decode(const uint8_t* block, int unit, float32x4_t out[8]) {
    const int half = unit / 4, run = unit % 4;
    const float d = LoadHalf(block + 208);
    const int8_t* scales = reinterpret_cast<const int8_t*>(block + 192);
    const int8x16_t low_shift = vdupq_n_s8(static_cast<int8_t>(-4 * (run / 2)));
    const int8x16_t high_shift = vdupq_n_s8(static_cast<int8_t>(-2 * run));
    for (int h = 0; h < 2; ++h) {
      uint8x16_t lo = vld1q_u8(block + 64 * half + 32 * (run % 2) + 16 * h);
      uint8x16_t hi = vld1q_u8(block + 128 + 32 * half + 16 * h);
      lo = vandq_u8(vshlq_u8(lo, low_shift), vdupq_n_u8(0x0f));
      hi = vandq_u8(vshlq_u8(hi, high_shift), vdupq_n_u8(3));
      int8x16_t q = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(lo, vshlq_n_u8(hi, 4))), vdupq_n_s8(32));
      float32x4_t scale = vdupq_n_f32(d * static_cast<float>(scales[2 * unit + h]));
      int16x8_t q_lo = vmovl_s8(vget_low_s8(q)), q_hi = vmovl_s8(vget_high_s8(q));
      float32x4_t* o = out + 4 * h;
      o[0] = vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(q_lo))), scale);
      o[1] = vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_high_s16(q_lo))), scale);
      o[2] = vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(q_hi))), scale);
      o[3] = vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_high_s16(q_hi))), scale);
    }
  }
};

// Plain types: a step is 4 elements.
struct F32Block {
  static constexpr size_t kElementBytes = 4;
  static float32x4_t Decode(const uint8_t* p) {
    return vld1q_f32(reinterpret_cast<const float*>(p));
  }
};

struct F16Block {
  static constexpr size_t kElementBytes = 2;
  static float32x4_t Decode(const uint8_t* p) {
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p))));
  }
};

struct BF16Block {
  static constexpr size_t kElementBytes = 2;
  static float32x4_t Decode(const uint8_t* p) {
    uint16x4_t bits = vld1_u16(reinterpret_cast<const uint16_t*>(p));
    return vreinterpretq_f32_u32(vshll_n_u16(bits, 16));
  }
};

// Fixed pairing: (l0 + l1) + (l2 + l3), the same for every output.
inline float ReduceAdd(float32x4_t v) {
  float32x2_t pairs = vpadd_f32(vget_low_f32(v), vget_high_f32(v));
  return vget_lane_f32(pairs, 0) + vget_lane_f32(pairs, 1);
}

template <int O, int R>
void StoreSums(const TileArgs& a, float32x4_t (&acc)[O][R]) {
  for (int r = 0; r < R; ++r) {
    for (int o = 0; o < O; ++o) a.y[r * a.n_out + o] = ReduceAdd(acc[o][r]);
  }
}

template <class B>
struct QuantizedTiles {
  template <int O, int R>
  static void Run(const TileArgs& a) {
    float32x4_t acc[O][R];
    for (int o = 0; o < O; ++o) {
      for (int r = 0; r < R; ++r) acc[o][r] = vdupq_n_f32(0.0f);
    }
    const int64_t units = a.n_in / 32;
    for (int64_t u = 0; u < units; ++u) {
      if constexpr (R == 1) tiles::PrefetchTileAhead<O>(a, u, units);
      const float* x = a.x + u * 32;
      const uint8_t* block = a.w + u / B::kUnits * B::kBytes;
      for (int o = 0; o < O; ++o) {
        float32x4_t w[8];
        B::Decode(block + o * a.row_bytes, static_cast<int>(u % B::kUnits), w);
        for (int r = 0; r < R; ++r) {
          for (int v = 0; v < 8; ++v) {
            acc[o][r] = vfmaq_f32(acc[o][r], w[v], vld1q_f32(x + r * a.n_in + 4 * v));
          }
        }
      }
    }
    StoreSums(a, acc);
  }
};

// Plain types: steps of 4 elements; a last partial step is zero-padded (adding nothing).
template <class B>
struct PlainTiles {
  template <int O, int R>
  static void Run(const TileArgs& a) {
    float32x4_t acc[O][R];
    for (int o = 0; o < O; ++o) {
      for (int r = 0; r < R; ++r) acc[o][r] = vdupq_n_f32(0.0f);
    }
    const int64_t steps = a.n_in / 4;
    for (int64_t s = 0; s < steps; ++s) {
      for (int o = 0; o < O; ++o) {
        float32x4_t w = B::Decode(a.w + o * a.row_bytes + s * 4 * B::kElementBytes);
        for (int r = 0; r < R; ++r) {
          acc[o][r] = vfmaq_f32(acc[o][r], w, vld1q_f32(a.x + r * a.n_in + s * 4));
        }
      }
    }
    const int64_t rest = a.n_in - steps * 4;
    if (rest > 0) {
      for (int o = 0; o < O; ++o) {
        alignas(16) uint8_t wpad[16] = {0};
        std::memcpy(wpad, a.w + o * a.row_bytes + steps * 4 * B::kElementBytes,
                    static_cast<size_t>(rest) * B::kElementBytes);
        float32x4_t w = B::Decode(wpad);
        for (int r = 0; r < R; ++r) {
          alignas(16) float xpad[4] = {0, 0, 0, 0};
          std::memcpy(xpad, a.x + r * a.n_in + steps * 4, static_cast<size_t>(rest) * 4);
          acc[o][r] = vfmaq_f32(acc[o][r], w, vld1q_f32(xpad));
        }
      }
    }
    StoreSums(a, acc);
  }
};

// 16 accumulators at most, leaving registers for the decoded block and the activations.
template <class B, template <class> class Kernel>
struct Shaped : Kernel<B> {
  static constexpr int kMaxRows = 4;
  static constexpr int kMaxOutputs = 4;
  static constexpr int kMaxOutputsOneRow = 4;
};

// This ISA's tile kernels for each weight type (tiles::DriveByType).
struct Kernels {
  using Q4_0 = Shaped<Q4_0Block, QuantizedTiles>;
  using Q4_1 = Shaped<Q4_1Block, QuantizedTiles>;
  using Q8_0 = Shaped<Q8_0Block, QuantizedTiles>;
  using Q5_0 = Shaped<Q5_0Block, QuantizedTiles>;
  using Q5_1 = Shaped<Q5_1Block, QuantizedTiles>;
  using Q4_K = Shaped<Q4_KBlock, QuantizedTiles>;
  using Q5_K = Shaped<Q5_KBlock, QuantizedTiles>;
  using Q6_K = Shaped<Q6_KBlock, QuantizedTiles>;
  using F32 = Shaped<F32Block, PlainTiles>;
  using F16 = Shaped<F16Block, PlainTiles>;
  using BF16 = Shaped<BF16Block, PlainTiles>;
};

}  // namespace

void MatMulRangeNeon(DType type, const uint8_t* w, int64_t n_out, int64_t n_in, const float* x,
                     int64_t rows, float* y, int64_t o_begin, int64_t o_end) {
  TileArgs whole{w, DTypeBytes(type, static_cast<uint64_t>(n_in)), x, n_in, y, n_out};
  if (!tiles::DriveByType<Kernels>(type, whole, rows, o_begin, o_end)) {
    ref::MatMulColumns(type, w, n_out, n_in, x, rows, y, o_begin, o_end);
  }
}

}  // namespace staticlm::cpu::detail

#endif  // defined(__aarch64__)
