// NEON products of int8 activations with weights in the packed x16 layout (packed_weights.h), on
// arm64 CPUs with the Armv8.2 dot-product instructions (SDOT; HWCAP asimddp). A 64-byte chunk of
// a block holds 4 consecutive values of each of the group's 16 rows; its quarter q (16 bytes) is
// rows 4q … 4q + 3, one per 32-bit lane, so one sdot against 4 activations broadcast from their
// register (the by-lane form) adds them into each row's own lane: no gathers, no cross-lane sums,
// the weights read front to back, as the AVX-512 VNNI kernel does with 16 lanes. Weights enter
// sdot as signed bytes: Q8_0's quants as they are, the other types' unsigned values (at most 63)
// as non-negative ones. The arithmetic per block is matmul_int8.h's, bit for bit (integer dot of
// u = w + offset, minus offset · Σx, then dw · dx · dot added in block order). Tested under qemu
// (scripts/test-arm64: matmul_packed_test against the reference); not timed on arm64 hardware.
#include "backends/cpu/matmul_int8.h"
#include "backends/cpu/matmul_packed_drive.h"
#include "backends/cpu/packed_weights.h"

#if defined(__aarch64__)

#include <arm_neon.h>

#include <cstring>

#define STATICLM_DOT __attribute__((target("arch=armv8.2-a+dotprod"), always_inline)) inline
#define STATICLM_DOT_KERNEL __attribute__((target("arch=armv8.2-a+dotprod")))

namespace staticlm::cpu::detail {
namespace {

constexpr int kMaxRows = 2;  // activation rows sharing each loaded weight chunk (32 registers)
// The software prefetch distance: as in the x86 packed kernels.
constexpr size_t kPrefetchAhead = 4096;

// The f16 values of rows 4q … 4q + 3 at p (16 rows, row c at 2c), as f32 (exact).
STATICLM_DOT float32x4_t HalvesAsFloats(const uint8_t* p, int q) {
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p) + 4 * q)));
}

// The 4 bytes of rows 4q … 4q + 3 at p (16 rows, row c at c), in the low half of a vector.
STATICLM_DOT uint8x8_t FourBytes(const uint8_t* p, int q) {
  uint32_t four;
  std::memcpy(&four, p + 4 * q, 4);
  return vreinterpret_u8_u32(vdup_n_u32(four));
}

// Those bytes unsigned, as f32.
STATICLM_DOT float32x4_t BytesAsFloats(const uint8_t* p, int q) {
  return vcvtq_f32_u32(vmovl_u16(vget_low_u16(vmovl_u8(FourBytes(p, q)))));
}

// Those bytes signed, as int32.
STATICLM_DOT int32x4_t BytesAsInts(const uint8_t* p, int q) {
  return vmovl_s16(vget_low_s16(vmovl_s8(vreinterpret_s8_u8(FourBytes(p, q)))));
}

// The low (s even) or high (s odd) nibbles of chunk s / 2 of a block's nibbles, quarter q.
STATICLM_DOT uint8x16_t Nibbles(const uint8_t* nibbles, int s, int q) {
  const uint8x16_t chunk = vld1q_u8(nibbles + 64 * (s / 2) + 16 * q);
  return s % 2 == 0 ? vandq_u8(chunk, vdupq_n_u8(0x0f)) : vshrq_n_u8(chunk, 4);
}

// Q8_0: dw of block b, 32 bytes per block at the group's start; step s is chunk s of the
// block's quants (signed, so no offset).
struct Q8_0Steps {
  static constexpr int32_t kOffset = 0;
  static constexpr size_t kBlockBytes = kPackedQ8_0Block;
  static constexpr bool kSubBlockScales = false;
  static constexpr bool kHasMin = false;
  const uint8_t* quants;
  STATICLM_DOT Q8_0Steps(const uint8_t* group, int64_t blocks, int64_t b)
      : quants(group + static_cast<size_t>(blocks) * kPackedScales + static_cast<size_t>(b) * 512) {
  }
  STATICLM_DOT static void Scales(const uint8_t* group, int64_t, int64_t b, float32x4_t dw[4],
                                  float32x4_t m[4]) {
    for (int q = 0; q < 4; ++q) {
      dw[q] = HalvesAsFloats(group + static_cast<size_t>(b) * kPackedScales, q);
      m[q] = vdupq_n_f32(0.0f);
    }
  }
  STATICLM_DOT int8x16_t Step(int s, int q) const {
    return vld1q_s8(reinterpret_cast<const int8_t*>(quants + 64 * s + 16 * q));
  }
};

// Bit 4 of each byte of step s, quarter q (values 4s … 4s + 3 of rows 4q … 4q + 3) from the
// block's 32-bit high-bit words at `words` (row c's at 4c): bits 4s … 4s + 3 of a row's word,
// spread one to a byte by a multiply (t · 0x02040810 puts bit j of t at bit 8j + 4, no two terms
// overlapping).
STATICLM_DOT uint8x16_t FifthBits(const uint8_t* words, int s, int q) {
  const uint32x4_t qh = vld1q_u32(reinterpret_cast<const uint32_t*>(words) + 4 * q);
  const uint32x4_t t = vandq_u32(vshlq_u32(qh, vdupq_n_s32(-4 * s)), vdupq_n_u32(0x0f));
  return vreinterpretq_u8_u32(
      vandq_u32(vmulq_u32(t, vdupq_n_u32(0x02040810)), vdupq_n_u32(0x10101010)));
}

// Q4_0, Q4_1, Q5_0 and Q5_1 as in the x86 files (packed_drive::LegacyTraits): dw = d and m =
// the f16 m of block b (0 without a min); step s, quarter q is the nibbles of Nibbles with the
// fifth bit of FifthBits for Q5_0 and Q5_1.
template <DType kType>
struct LegacySteps : packed_drive::LegacyTraits<kType> {
  using T = packed_drive::LegacyTraits<kType>;
  const uint8_t* nibbles;
  const uint8_t* high_bits;
  STATICLM_DOT LegacySteps(const uint8_t* group, int64_t blocks, int64_t b) {
    const size_t n = static_cast<size_t>(blocks), block = static_cast<size_t>(b);
    const uint8_t* high = group + n * T::kLayout.scales;
    high_bits = high + block * T::kLayout.high_bits;
    nibbles = high + n * T::kLayout.high_bits + block * kPackedNibbles;
  }
  STATICLM_DOT static void Scales(const uint8_t* group, int64_t, int64_t b, float32x4_t dw[4],
                                  float32x4_t m[4]) {
    const uint8_t* scales = group + static_cast<size_t>(b) * T::kLayout.scales;
    for (int q = 0; q < 4; ++q) {
      dw[q] = HalvesAsFloats(scales, q);
      m[q] = T::kHasMin ? HalvesAsFloats(scales + kPackedScales, q) : vdupq_n_f32(0.0f);
    }
  }
  STATICLM_DOT int8x16_t Step(int s, int q) const {
    const uint8x16_t low4 = Nibbles(nibbles, s, q);
    if constexpr (!T::kFifth) return vreinterpretq_s8_u8(low4);
    return vreinterpretq_s8_u8(vorrq_u8(low4, FifthBits(high_bits, s, q)));
  }
};

// Q6_K: dw = the super-block's d; step s, quarter q: the nibbles of Nibbles with bits 4-5 from
// bits 2 (s % 4), +1 of high-bit chunk s / 4 (a byte shift: what else moves is masked off).
// u = q6 = wq + 32. Steps 0-3 carry the block's first scale (sa), 4-7 its second (sb).
struct Q6_KSteps {
  static constexpr int32_t kOffset = 32;
  static constexpr size_t kBlockBytes = kPackedQ6_KBlock;
  static constexpr bool kSubBlockScales = true;
  static constexpr bool kHasMin = false;
  const uint8_t* nibbles;
  const uint8_t* high_bits;
  int32x4_t sa[4], sb[4];  // rows 4q … 4q + 3
  STATICLM_DOT Q6_KSteps(const uint8_t* group, int64_t blocks, int64_t b) {
    const PackedQ6KSections at = Q6KSections(blocks);
    const size_t block = static_cast<size_t>(b);
    nibbles = group + at.nibbles + 256 * block;
    high_bits = group + at.high_bits + 128 * block;
    const uint8_t* scales = group + at.scales + 32 * block;
    for (int q = 0; q < 4; ++q) {
      sa[q] = BytesAsInts(scales, q);
      sb[q] = BytesAsInts(scales + 16, q);
    }
  }
  STATICLM_DOT static void Scales(const uint8_t* group, int64_t, int64_t b, float32x4_t dw[4],
                                  float32x4_t m[4]) {
    for (int q = 0; q < 4; ++q) {
      dw[q] = HalvesAsFloats(group + static_cast<size_t>(b / 8) * kPackedScales, q);
      m[q] = vdupq_n_f32(0.0f);
    }
  }
  STATICLM_DOT int8x16_t Step(int s, int q) const {
    const uint8x16_t low4 = Nibbles(nibbles, s, q);
    const uint8x16_t high = vld1q_u8(high_bits + 64 * (s / 4) + 16 * q);
    const uint8x16_t at45 = vshlq_u8(high, vdupq_n_s8(static_cast<int8_t>(4 - 2 * (s % 4))));
    return vreinterpretq_s8_u8(vorrq_u8(low4, vandq_u8(at45, vdupq_n_u8(0x30))));
  }
};

// dw = d · sc and m = −(dmin · min) of block b of Q4_K or Q5_K (d and dmin 64 bytes per
// super-block at the group's start, the scales section at `scales`; exact products, as the
// reference's).
STATICLM_DOT void KQuantMinScales(const uint8_t* group, size_t scales, int64_t b, float32x4_t dw[4],
                                  float32x4_t m[4]) {
  const uint8_t* d = group + 64 * static_cast<size_t>(b / 8);
  const uint8_t* sc = group + scales + 32 * static_cast<size_t>(b);
  for (int q = 0; q < 4; ++q) {
    dw[q] = vmulq_f32(HalvesAsFloats(d, q), BytesAsFloats(sc, q));
    m[q] = vnegq_f32(vmulq_f32(HalvesAsFloats(d + 32, q), BytesAsFloats(sc + 16, q)));
  }
}

// Q4_K: dw = d · sc and m = −(dmin · min) of block b; step s is the nibbles of Nibbles (u = wq).
struct Q4_KSteps {
  static constexpr int32_t kOffset = 0;
  static constexpr size_t kBlockBytes = kPackedQ4_KBlock;
  static constexpr bool kSubBlockScales = false;
  static constexpr bool kHasMin = true;
  const uint8_t* nibbles;
  STATICLM_DOT Q4_KSteps(const uint8_t* group, int64_t blocks, int64_t b)
      : nibbles(group + Q4KSections(blocks).nibbles + 256 * static_cast<size_t>(b)) {}
  STATICLM_DOT static void Scales(const uint8_t* group, int64_t blocks, int64_t b,
                                  float32x4_t dw[4], float32x4_t m[4]) {
    KQuantMinScales(group, Q4KSections(blocks).scales, b, dw, m);
  }
  STATICLM_DOT int8x16_t Step(int s, int q) const {
    return vreinterpretq_s8_u8(Nibbles(nibbles, s, q));
  }
};

// Q5_K: dw and m as Q4_K's; step s is the nibbles of Nibbles with the fifth bit of FifthBits.
struct Q5_KSteps {
  static constexpr int32_t kOffset = 0;
  static constexpr size_t kBlockBytes = kPackedQ5_KBlock;
  static constexpr bool kSubBlockScales = false;
  static constexpr bool kHasMin = true;
  const uint8_t* nibbles;
  const uint8_t* high_bits;
  STATICLM_DOT Q5_KSteps(const uint8_t* group, int64_t blocks, int64_t b) {
    const PackedQ5KSections at = Q5KSections(blocks);
    nibbles = group + at.nibbles + 256 * static_cast<size_t>(b);
    high_bits = group + at.high_bits + 64 * static_cast<size_t>(b);
  }
  STATICLM_DOT static void Scales(const uint8_t* group, int64_t blocks, int64_t b,
                                  float32x4_t dw[4], float32x4_t m[4]) {
    KQuantMinScales(group, Q5KSections(blocks).scales, b, dw, m);
  }
  STATICLM_DOT int8x16_t Step(int s, int q) const {
    return vreinterpretq_s8_u8(vorrq_u8(Nibbles(nibbles, s, q), FifthBits(high_bits, s, q)));
  }
};

// Rows [r0, r0 + R) × one group of 16 output columns at `group`; y points at (r0, column 0);
// only the first `count` columns are stored.
template <class B, int R>
STATICLM_DOT_KERNEL void RunPackedTile(const uint8_t* group, int64_t blocks,
                                       const QuantizedActivations& x, int64_t r0, float* y,
                                       int64_t n_out, int count) {
  const int8_t* xq = static_cast<const int8_t*>(x.q);
  float32x4_t acc[R][4];
  for (int r = 0; r < R; ++r) {
    for (int q = 0; q < 4; ++q) acc[r][q] = vdupq_n_f32(0.0f);
  }
  for (int64_t b = 0; b < blocks; ++b) {
    float32x4_t dw[4], m[4];
    B::Scales(group, blocks, b, dw, m);
    for (size_t line = 0; line < B::kBlockBytes; line += 64) {
      __builtin_prefetch(group + kPrefetchAhead + static_cast<size_t>(b) * B::kBlockBytes + line);
    }
    const B steps(group, blocks, b);
    // Per row and quarter: one sum over the steps, or with kSubBlockScales one per scale (steps
    // 0-3, 4-7), combined as sa · (dot_a − offset · Σ q[0..15]) + sb · (the same for 16..31).
    constexpr bool kSub = B::kSubBlockScales;
    constexpr int kSums = kSub ? 2 : 1;
    int8x16_t xs[R][2];  // the block's 32 activations of each row
    int32x4_t dot[R][4][kSums];
    for (int r = 0; r < R; ++r) {
      const int8_t* row = xq + ((r0 + r) * blocks + b) * kQuantBlock;
      xs[r][0] = vld1q_s8(row);
      xs[r][1] = vld1q_s8(row + 16);
      for (int q = 0; q < 4; ++q) {
        for (int k = 0; k < kSums; ++k) dot[r][q][k] = vdupq_n_s32(0);
      }
    }
#pragma GCC unroll 8
    for (int s = 0; s < 8; ++s) {
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) {
        const int8x16_t w = steps.Step(s, q);
#pragma GCC unroll 2
        for (int r = 0; r < R; ++r) {
          int32x4_t& sum = dot[r][q][kSub ? s / 4 : 0];
          // Activations 4s … 4s + 3: 32-bit lane s % 4 of register s / 4.
          switch (s % 4) {
            case 0:
              sum = vdotq_laneq_s32(sum, w, xs[r][s / 4], 0);
              break;
            case 1:
              sum = vdotq_laneq_s32(sum, w, xs[r][s / 4], 1);
              break;
            case 2:
              sum = vdotq_laneq_s32(sum, w, xs[r][s / 4], 2);
              break;
            default:
              sum = vdotq_laneq_s32(sum, w, xs[r][s / 4], 3);
              break;
          }
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      const int64_t xb = (r0 + r) * blocks + b;
      const float32x4_t dx = vdupq_n_f32(x.d[xb]);
      const float32x4_t min_x = vdupq_n_f32(x.d[xb] * static_cast<float>(x.sum[xb]));
      int32_t sum_a = 0;
      if constexpr (kSub) {
        for (int i = 0; i < 16; ++i) sum_a += xq[xb * kQuantBlock + i];
      }
      for (int q = 0; q < 4; ++q) {
        int32x4_t idot;
        if constexpr (kSub) {
          const int32_t sum_b = x.sum[xb] - sum_a;
          const int32x4_t a = vsubq_s32(dot[r][q][0], vdupq_n_s32(B::kOffset * sum_a));
          const int32x4_t c = vsubq_s32(dot[r][q][kSums - 1], vdupq_n_s32(B::kOffset * sum_b));
          idot = vaddq_s32(vmulq_s32(steps.sa[q], a), vmulq_s32(steps.sb[q], c));
        } else {
          idot = vsubq_s32(dot[r][q][0], vdupq_n_s32(B::kOffset * x.sum[xb]));
        }
        float32x4_t term = vmulq_f32(vmulq_f32(dw[q], dx), vcvtq_f32_s32(idot));
        if constexpr (B::kHasMin) term = vaddq_f32(term, vmulq_f32(m[q], min_x));
        acc[r][q] = vaddq_f32(acc[r][q], term);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    float lanes[kPackedColumns];
    for (int q = 0; q < 4; ++q) vst1q_f32(lanes + 4 * q, acc[r][q]);
    std::memcpy(y + r * n_out, lanes, sizeof(float) * static_cast<size_t>(count));
  }
}

struct NeonDotPacked {
  static constexpr int kMaxRows = detail::kMaxRows;
  using Q8_0 = Q8_0Steps;
  using Q4_0 = LegacySteps<DType::kQ4_0>;
  using Q4_1 = LegacySteps<DType::kQ4_1>;
  using Q5_0 = LegacySteps<DType::kQ5_0>;
  using Q5_1 = LegacySteps<DType::kQ5_1>;
  using Q6_K = Q6_KSteps;
  using Q4_K = Q4_KSteps;
  using Q5_K = Q5_KSteps;
  template <class B, int R>
  static void Tile(const uint8_t* group, int64_t blocks, const QuantizedActivations& x, int64_t r0,
                   float* y, int64_t n_out, int count) {
    RunPackedTile<B, R>(group, blocks, x, r0, y, n_out, count);
  }
};

}  // namespace

void MatMulInt8PackedRangeNeonDot(DType type, const uint8_t* packed, int64_t n_out,
                                  const QuantizedActivations& x, float* y, int64_t o_begin,
                                  int64_t o_end) {
  packed_drive::MatMulRange<NeonDotPacked>(type, packed, n_out, x, y, o_begin, o_end);
}

}  // namespace staticlm::cpu::detail

#endif  // defined(__aarch64__)
