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

#include "backends/cpu/matmul_tiles.h"

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

// Quantized blocks of 32 decode to 8 vectors: elements 0-15 then 16-31.
struct Q4_0Block {
  static constexpr size_t kBytes = 18;
  static void Decode(const uint8_t* block, float32x4_t out[8]) {
    float d = LoadHalf(block);
    uint8x16_t qs = vld1q_u8(block + 2);
    float32x4_t dv = vdupq_n_f32(d), offset = vdupq_n_f32(-8.0f * d);
    DecodeNibbleHalf(vandq_u8(qs, vdupq_n_u8(0x0f)), dv, offset, out);
    DecodeNibbleHalf(vshrq_n_u8(qs, 4), dv, offset, out + 4);
  }
};

struct Q4_1Block {
  static constexpr size_t kBytes = 20;
  static void Decode(const uint8_t* block, float32x4_t out[8]) {
    float32x4_t dv = vdupq_n_f32(LoadHalf(block)), offset = vdupq_n_f32(LoadHalf(block + 2));
    uint8x16_t qs = vld1q_u8(block + 4);
    DecodeNibbleHalf(vandq_u8(qs, vdupq_n_u8(0x0f)), dv, offset, out);
    DecodeNibbleHalf(vshrq_n_u8(qs, 4), dv, offset, out + 4);
  }
};

struct Q8_0Block {
  static constexpr size_t kBytes = 34;
  static void Decode(const uint8_t* block, float32x4_t out[8]) {
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
    const int64_t blocks = a.n_in / 32;
    for (int64_t b = 0; b < blocks; ++b) {
      if constexpr (R == 1) tiles::PrefetchTileAhead<O>(a, b, blocks);
      const float* x = a.x + b * 32;
      for (int o = 0; o < O; ++o) {
        float32x4_t w[8];
        B::Decode(a.w + o * a.row_bytes + b * B::kBytes, w);
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
  using F32 = Shaped<F32Block, PlainTiles>;
  using F16 = Shaped<F16Block, PlainTiles>;
  using BF16 = Shaped<BF16Block, PlainTiles>;
};

}  // namespace

void MatMulRangeNeon(DType type, const uint8_t* w, int64_t n_out, int64_t n_in, const float* x,
                     int64_t rows, float* y, int64_t o_begin, int64_t o_end) {
  TileArgs whole{w, DTypeBytes(type, static_cast<uint64_t>(n_in)), x, n_in, y, n_out};
  if (!tiles::DriveByType<Kernels>(type, whole, rows, o_begin, o_end)) {
    MatMulRangeReference(type, w, n_out, n_in, x, rows, y, o_begin, o_end);
  }
}

}  // namespace staticlm::cpu::detail

#endif  // defined(__aarch64__)
