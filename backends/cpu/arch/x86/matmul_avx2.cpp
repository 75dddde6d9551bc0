// AVX2 + FMA matmul kernels. Only the functions marked STATICLM_AVX2 use those instructions;
// the file is compiled for baseline x86-64 and runs only after SelectMatMul has checked the
// CPU.
//
// Vectors are 8 floats. Quantized weights are decoded in units of 32 elements, four vectors:
// lane j of vector v holds element 8v + j. A unit is a whole block, or one of the 8
// sub-blocks of a K-quant super-block.
#include "backends/cpu/matmul_impls.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include <cstring>

#include "backends/cpu/kquant_scales.h"
#include "backends/cpu/matmul_tiles.h"
#include "backends/cpu/reference_kernels.h"

#define STATICLM_AVX2 __attribute__((target("avx2,fma,f16c"), always_inline)) inline
#define STATICLM_AVX2_KERNEL __attribute__((target("avx2,fma,f16c")))

namespace staticlm::cpu::detail {
namespace {

using tiles::TileArgs;

// Block scales are decoded ahead of the blocks, kScaleChunk at a time, into a small array on
// the stack (one gather and one vcvtph2ps per 8 blocks); the block loop then broadcasts them
// straight from memory.
constexpr int kScaleChunk = 8;

// Lane j: the 32-bit word at the start of block j (j < count; the other lanes 0), which holds
// the block's f16 d in its low half and, in Q4_1, the f16 m in its high half.
template <size_t kBlockBytes>
STATICLM_AVX2 __m256i GatherBlockWords(const uint8_t* first_block, int count) {
  const __m256i offsets =
      _mm256_setr_epi32(0 * kBlockBytes, 1 * kBlockBytes, 2 * kBlockBytes, 3 * kBlockBytes,
                        4 * kBlockBytes, 5 * kBlockBytes, 6 * kBlockBytes, 7 * kBlockBytes);
  const __m256i lanes =
      _mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  return _mm256_mask_i32gather_epi32(_mm256_setzero_si256(),
                                     reinterpret_cast<const int*>(first_block), offsets, lanes, 1);
}

// The f16s in the low halves of `low` and in the high halves of `high`, as f32 (8 each).
STATICLM_AVX2 void SplitHalves(__m256i words, float* low, float* high) {
  __m256i packed = _mm256_packus_epi32(_mm256_and_si256(words, _mm256_set1_epi32(0xffff)),
                                       _mm256_srli_epi32(words, 16));
  // packus works per 128-bit lane: [low 0-3, high 0-3 | low 4-7, high 4-7].
  packed = _mm256_permute4x64_epi64(packed, _MM_SHUFFLE(3, 1, 2, 0));
  _mm256_storeu_ps(low, _mm256_cvtph_ps(_mm256_castsi256_si128(packed)));
  if (high != nullptr) _mm256_storeu_ps(high, _mm256_cvtph_ps(_mm256_extracti128_si256(packed, 1)));
}

// Vector v (8 elements) of a Q4 block: v = 0, 1 are the low nibbles of qs[0-7], qs[8-15]
// (elements 0-15), v = 2, 3 their high nibbles (elements 16-31). q · d is exact in f32 (4 bits
// × the 11 of an f16), so the one rounding of the fused multiply-add gives the very value the
// reference gets from float(q) · d + offset.
STATICLM_AVX2 __m256 NibbleVector(const uint8_t* qs, int v, __m256 d, __m256 offset) {
  __m256i bytes =
      _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs + 8 * (v & 1))));
  __m256i q =
      v < 2 ? _mm256_and_si256(bytes, _mm256_set1_epi32(0x0f)) : _mm256_srli_epi32(bytes, 4);
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(q), d, offset);
}

// Quantized blocks of kUnits units of kElements. LoadScales fills scales[k * kScaleChunk + j]
// with scale k of unit j (count units, whole blocks, from block `first`); Vector gets its
// block, a pointer to its unit's first scale, the unit's index in its block and the vector's
// in its unit.
struct Q4_0Block {
  static constexpr int kElements = 32;
  static constexpr int kUnits = 1;
  static constexpr size_t kBytes = 18;
  static constexpr int kScales = 2;  // d, −8·d
  STATICLM_AVX2 static void LoadScales(const uint8_t* first, int count, float* scales) {
    SplitHalves(GatherBlockWords<kBytes>(first, count), scales, nullptr);
    __m256 d = _mm256_loadu_ps(scales);
    _mm256_storeu_ps(scales + kScaleChunk, _mm256_mul_ps(d, _mm256_set1_ps(-8.0f)));
  }
  STATICLM_AVX2 static __m256 Vector(const uint8_t* block, const float* s, int, int v) {
    return NibbleVector(block + 2, v, _mm256_broadcast_ss(s), _mm256_broadcast_ss(s + kScaleChunk));
  }
};

struct Q4_1Block {
  static constexpr int kElements = 32;
  static constexpr int kUnits = 1;
  static constexpr size_t kBytes = 20;
  static constexpr int kScales = 2;  // d, m
  STATICLM_AVX2 static void LoadScales(const uint8_t* first, int count, float* scales) {
    SplitHalves(GatherBlockWords<kBytes>(first, count), scales, scales + kScaleChunk);
  }
  STATICLM_AVX2 static __m256 Vector(const uint8_t* block, const float* s, int, int v) {
    return NibbleVector(block + 4, v, _mm256_broadcast_ss(s), _mm256_broadcast_ss(s + kScaleChunk));
  }
};

struct Q8_0Block {
  static constexpr int kElements = 32;
  static constexpr int kUnits = 1;
  static constexpr size_t kBytes = 34;
  static constexpr int kScales = 1;  // d
  STATICLM_AVX2 static void LoadScales(const uint8_t* first, int count, float* scales) {
    SplitHalves(GatherBlockWords<kBytes>(first, count), scales, nullptr);
  }
  STATICLM_AVX2 static __m256 Vector(const uint8_t* block, const float* s, int, int v) {
    __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(block + 2 + 8 * v));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), _mm256_broadcast_ss(s));
  }
};

// Q5 blocks: the Q4 nibbles plus a fifth bit, bit 8v + i of qh (a little-endian u32) for lane
// i of vector v. q · d is exact (5 bits × 11), so the fused multiply-add rounds once, as the
// reference: for Q5_0 the offset −16·d makes it (q − 16) · d, exact.
STATICLM_AVX2 __m256 FiveBitVector(const uint8_t* qh_bytes, const uint8_t* qs, int v, __m256 d,
                                   __m256 offset) {
  __m256i bytes =
      _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs + 8 * (v & 1))));
  __m256i nibble =
      v < 2 ? _mm256_and_si256(bytes, _mm256_set1_epi32(0x0f)) : _mm256_srli_epi32(bytes, 4);
  uint32_t qh;
  std::memcpy(&qh, qh_bytes, sizeof(qh));
  // Lane i shifts its bit to position 4.
  __m256i bits = _mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>((qh >> (8 * v)) << 4)),
                                   _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  __m256i q = _mm256_or_si256(nibble, _mm256_and_si256(bits, _mm256_set1_epi32(16)));
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(q), d, offset);
}

struct Q5_0Block {
  static constexpr int kElements = 32;
  static constexpr int kUnits = 1;
  static constexpr size_t kBytes = 22;
  static constexpr int kScales = 2;  // d, −16·d
  STATICLM_AVX2 static void LoadScales(const uint8_t* first, int count, float* scales) {
    SplitHalves(GatherBlockWords<kBytes>(first, count), scales, nullptr);
    __m256 d = _mm256_loadu_ps(scales);
    _mm256_storeu_ps(scales + kScaleChunk, _mm256_mul_ps(d, _mm256_set1_ps(-16.0f)));
  }
  STATICLM_AVX2 static __m256 Vector(const uint8_t* block, const float* s, int, int v) {
    return FiveBitVector(block + 2, block + 6, v, _mm256_broadcast_ss(s),
                         _mm256_broadcast_ss(s + kScaleChunk));
  }
};

struct Q5_1Block {
  static constexpr int kElements = 32;
  static constexpr int kUnits = 1;
  static constexpr size_t kBytes = 24;
  static constexpr int kScales = 2;  // d, m
  STATICLM_AVX2 static void LoadScales(const uint8_t* first, int count, float* scales) {
    SplitHalves(GatherBlockWords<kBytes>(first, count), scales, scales + kScaleChunk);
  }
  STATICLM_AVX2 static __m256 Vector(const uint8_t* block, const float* s, int, int v) {
    return FiveBitVector(block + 4, block + 8, v, _mm256_broadcast_ss(s),
                         _mm256_broadcast_ss(s + kScaleChunk));
  }
};

// K-quants: a chunk of 8 units is one super-block, unit j its sub-block j.
constexpr int kSubBlocks = 8;

STATICLM_AVX2 __m256 HalfToFloats(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof(h));
  return _mm256_cvtph_ps(_mm_set1_epi16(static_cast<short>(h)));
}

// 8 bytes, unsigned or signed, as f32.
STATICLM_AVX2 __m256 BytesToFloats(const uint8_t* p) {
  return _mm256_cvtepi32_ps(
      _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}
STATICLM_AVX2 __m256 SignedBytesToFloats(const uint8_t* p) {
  return _mm256_cvtepi32_ps(
      _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

// Q4_K and Q5_K: scales[j] = d · sc and scales[8 + j] = −(dmin · m) of sub-block j, each the
// reference's one rounded product (the negation is exact, and keeps the sign of a zero).
STATICLM_AVX2 void LoadSubBlockScales(const uint8_t* block, float* scales) {
  alignas(8) uint8_t sc[8], m[8];
  kquant::UnpackScalesAndMins(block + 4, sc, m);
  const __m256 neg_dmin = _mm256_xor_ps(HalfToFloats(block + 2), _mm256_set1_ps(-0.0f));
  _mm256_storeu_ps(scales, _mm256_mul_ps(HalfToFloats(block), BytesToFloats(sc)));
  _mm256_storeu_ps(scales + kScaleChunk, _mm256_mul_ps(neg_dmin, BytesToFloats(m)));
}

// Vector v of sub-block `unit`'s 4-bit values, widened to 32 bits: sub-blocks 2g and 2g + 1
// share 32 bytes, low nibbles then high.
STATICLM_AVX2 __m256i SubBlockNibbles(const uint8_t* qs, int unit, int v) {
  const uint8_t* bytes = qs + 32 * (unit / 2) + 8 * v;
  __m256i wide = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(bytes)));
  wide = _mm256_srl_epi32(wide, _mm_cvtsi32_si128(4 * (unit % 2)));
  return _mm256_and_si256(wide, _mm256_set1_epi32(15));
}

// value = (d · sc) · q − dmin · m: (d · sc) · q is exact (17 bits × 5), so the fused
// multiply-add rounds once, as the reference's subtraction does.
struct Q4_KBlock {
  static constexpr int kElements = 32;
  static constexpr int kUnits = kSubBlocks;
  static constexpr size_t kBytes = 144;
  static constexpr int kScales = 2;  // d · sc, −dmin · m
  STATICLM_AVX2 static void LoadScales(const uint8_t* first, int, float* scales) {
    LoadSubBlockScales(first, scales);
  }
  STATICLM_AVX2 static __m256 Vector(const uint8_t* block, const float* s, int unit, int v) {
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(SubBlockNibbles(block + 16, unit, v)),
                           _mm256_broadcast_ss(s), _mm256_broadcast_ss(s + kScaleChunk));
  }
};

struct Q5_KBlock {
  static constexpr int kElements = 32;
  static constexpr int kUnits = kSubBlocks;
  static constexpr size_t kBytes = 176;
  static constexpr int kScales = 2;  // d · sc, −dmin · m
  STATICLM_AVX2 static void LoadScales(const uint8_t* first, int, float* scales) {
    LoadSubBlockScales(first, scales);
  }
  // Element k's fifth bit is bit `unit` of qh[k].
  STATICLM_AVX2 static __m256 Vector(const uint8_t* block, const float* s, int unit, int v) {
    __m256i qh =
        _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(block + 16 + 8 * v)));
    __m256i bit = _mm256_and_si256(
        _mm256_srl_epi32(_mm256_slli_epi32(qh, 4), _mm_cvtsi32_si128(unit)), _mm256_set1_epi32(16));
    __m256i q = _mm256_or_si256(SubBlockNibbles(block + 48, unit, v), bit);
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(q), _mm256_broadcast_ss(s),
                           _mm256_broadcast_ss(s + kScaleChunk));
  }
};

// 64-bit pairs [p0 p1 | p2 p3] as [p0 p2 | p1 p3]: puts the lanes of an in-lane shufps of two
// vectors back in order.
STATICLM_AVX2 __m256 InLaneOrder(__m256 v) {
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v), _MM_SHUFFLE(3, 1, 2, 0)));
}

// Q6_K: 16 scales of 16 elements; vectors 0-1 of unit j use scales[j] = d · scales[2j],
// vectors 2-3 scales[8 + j] = d · scales[2j + 1].
struct Q6_KBlock {
  static constexpr int kElements = 32;
  static constexpr int kUnits = kSubBlocks;
  static constexpr size_t kBytes = 210;
  static constexpr int kScales = 2;  // d · scales[2j], d · scales[2j + 1]
  STATICLM_AVX2 static void LoadScales(const uint8_t* first, int, float* scales) {
    const __m256 d = HalfToFloats(first + 208);
    const __m256 lo = _mm256_mul_ps(d, SignedBytesToFloats(first + 192));
    const __m256 hi = _mm256_mul_ps(d, SignedBytesToFloats(first + 200));
    // shufps picks within 128-bit lanes: [lo 0 2, hi 0 2 | lo 4 6, hi 4 6].
    _mm256_storeu_ps(scales, InLaneOrder(_mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0))));
    _mm256_storeu_ps(scales + kScaleChunk,
                     InLaneOrder(_mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1))));
  }
  // Unit u is elements 32(u % 4) ... of half u / 4: the low 4 bits are the low (u % 4 < 2) or
  // high nibbles of 32 bytes of the half's ql, the high 2 bits are bits 2(u % 4) of its qh.
  STATICLM_AVX2 static __m256 Vector(const uint8_t* block, const float* s, int unit, int v) {
    const int half = unit / 4, run = unit % 4;
    __m128i lo = _mm_loadl_epi64(
        reinterpret_cast<const __m128i*>(block + 64 * half + 32 * (run % 2) + 8 * v));
    __m128i hi = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(block + 128 + 32 * half + 8 * v));
    lo = _mm_and_si128(_mm_srl_epi16(lo, _mm_cvtsi32_si128(4 * (run / 2))), _mm_set1_epi8(15));
    hi = _mm_and_si128(_mm_srl_epi16(hi, _mm_cvtsi32_si128(2 * run)), _mm_set1_epi8(3));
    __m128i q = _mm_sub_epi8(_mm_or_si128(lo, _mm_slli_epi16(hi, 4)), _mm_set1_epi8(32));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)),
                         _mm256_broadcast_ss(s + (v / 2) * kScaleChunk));
  }
};

// Plain types: a step is 8 elements; the last partial step goes through a zeroed copy.
struct F32Block {
  static constexpr size_t kBytes = 32;
  STATICLM_AVX2 static __m256 Decode(const uint8_t* p) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
  }
};

struct F16Block {
  static constexpr size_t kBytes = 16;
  STATICLM_AVX2 static __m256 Decode(const uint8_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
};

struct BF16Block {
  static constexpr size_t kBytes = 16;
  STATICLM_AVX2 static __m256 Decode(const uint8_t* p) {
    __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  }
};

// Fixed pairing (halves, then quarters, ...) so every output is reduced the same way.
STATICLM_AVX2 float ReduceAdd(__m256 v) {
  __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
  return _mm_cvtss_f32(s1);
}

// Every output (o, r) owns accumulator acc[o][r] and sees the same operations in the same
// order whatever the tile shape: that is what makes results independent of tiling.
template <int O, int R>
STATICLM_AVX2 void StoreSums(const TileArgs& a, __m256 (&acc)[O][R]) {
  for (int r = 0; r < R; ++r) {
    for (int o = 0; o < O; ++o) a.y[r * a.n_out + o] = ReduceAdd(acc[o][r]);
  }
}

template <class B>
struct QuantizedTiles {
  template <int O, int R>
  STATICLM_AVX2_KERNEL static void Run(const TileArgs& a) {
    __m256 acc[O][R];
    for (int o = 0; o < O; ++o) {
      for (int r = 0; r < R; ++r) acc[o][r] = _mm256_setzero_ps();
    }
    alignas(32) float scales[O][B::kScales * kScaleChunk];
    const int64_t units = a.n_in / B::kElements;
    const int64_t chunks = (units + kScaleChunk - 1) / kScaleChunk;
    for (int64_t u0 = 0; u0 < units; u0 += kScaleChunk) {
      if constexpr (R == 1) tiles::PrefetchTileAhead<O>(a, u0 / kScaleChunk, chunks);
      const int count = static_cast<int>(units - u0 < kScaleChunk ? units - u0 : kScaleChunk);
      const uint8_t* chunk = a.w + u0 / B::kUnits * B::kBytes;
      for (int o = 0; o < O; ++o) B::LoadScales(chunk + o * a.row_bytes, count, scales[o]);
      for (int j = 0; j < count; ++j) {
        const uint8_t* block = chunk + j / B::kUnits * B::kBytes;
        const float* x = a.x + (u0 + j) * B::kElements;
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) {
#pragma GCC unroll 8
          for (int o = 0; o < O; ++o) {
            __m256 wv = B::Vector(block + o * a.row_bytes, &scales[o][j], j % B::kUnits, v);
#pragma GCC unroll 4
            for (int r = 0; r < R; ++r) {
              acc[o][r] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + r * a.n_in + 8 * v), acc[o][r]);
            }
          }
        }
      }
    }
    StoreSums(a, acc);
  }
};

template <class B>
struct PlainTiles {
  template <int O, int R>
  STATICLM_AVX2_KERNEL static void Run(const TileArgs& a) {
    __m256 acc[O][R];
    for (int o = 0; o < O; ++o) {
      for (int r = 0; r < R; ++r) acc[o][r] = _mm256_setzero_ps();
    }
    const int64_t steps = a.n_in / 8;
    for (int64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 8
      for (int o = 0; o < O; ++o) {
        __m256 wv = B::Decode(a.w + o * a.row_bytes + s * B::kBytes);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
          acc[o][r] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(a.x + r * a.n_in + s * 8), acc[o][r]);
        }
      }
    }
    const int64_t rest = a.n_in - steps * 8;
    if (rest > 0) {
      const size_t element_bytes = B::kBytes / 8;
      for (int o = 0; o < O; ++o) {
        alignas(32) uint8_t wtail[B::kBytes] = {};
        std::memcpy(wtail, a.w + o * a.row_bytes + steps * B::kBytes, rest * element_bytes);
        __m256 wv = B::Decode(wtail);
        for (int r = 0; r < R; ++r) {
          alignas(32) float xtail[8] = {};
          std::memcpy(xtail, a.x + r * a.n_in + steps * 8, rest * sizeof(float));
          acc[o][r] = _mm256_fmadd_ps(wv, _mm256_load_ps(xtail), acc[o][r]);
        }
      }
    }
    StoreSums(a, acc);
  }
};

// Tile shapes, found by measurement, within the 16 ymm registers.
template <class B, template <class> class Kernel>
struct Shaped : Kernel<B> {
  static constexpr int kMaxRows = 4;
  static constexpr int kMaxOutputs = 2;
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

void MatMulRangeAvx2(DType type, const uint8_t* w, int64_t n_out, int64_t n_in, const float* x,
                     int64_t rows, float* y, int64_t o_begin, int64_t o_end) {
  TileArgs whole{w, DTypeBytes(type, static_cast<uint64_t>(n_in)), x, n_in, y, n_out};
  if (!tiles::DriveByType<Kernels>(type, whole, rows, o_begin, o_end)) {
    ref::MatMulColumns(type, w, n_out, n_in, x, rows, y, o_begin, o_end);
  }
}

}  // namespace staticlm::cpu::detail

#endif  // defined(__x86_64__)
