// AVX-512 matmul kernels. Only the functions marked STATICLM_AVX512 use AVX-512; the file is
// compiled for baseline x86-64 and runs only after SelectMatMul has checked the CPU.
//
// Vectors are 16 floats. Quantized weights are decoded in units of 32 elements, two vectors:
// lane j of the first holds element j, lane j of the second element j + 16 (the low and high
// nibbles of qs[j] in Q4 and Q5). A unit is a whole block, or one of the 8 sub-blocks of a
// K-quant super-block.
#include "backends/cpu/matmul_impls.h"

#if defined(__x86_64__)

#include "backends/cpu/arch/x86/avx512_intrinsics.h"

#include <cstring>

#include "backends/cpu/kquant_scales.h"
#include "backends/cpu/matmul_tiles.h"
#include "backends/cpu/reference_kernels.h"

namespace staticlm::cpu::detail {
namespace {

using tiles::TileArgs;

// Block scales are decoded ahead of the blocks, kScaleChunk at a time, into a small array on
// the stack: one gather and one vcvtph2ps for 16 blocks, where a scalar conversion and a
// broadcast per block would compete with the nibble shuffles for the same execution port.
constexpr int kScaleChunk = 16;

// Lane j: the 32-bit word at the start of block j (j < count; the other lanes 0), which holds
// the block's f16 d in its low half and, in Q4_1, the f16 m in its high half.
template <size_t kBlockBytes>
STATICLM_AVX512 __m512i GatherBlockWords(const uint8_t* first_block, int count) {
  const __m512i offsets =
      _mm512_setr_epi32(0 * kBlockBytes, 1 * kBlockBytes, 2 * kBlockBytes, 3 * kBlockBytes,
                        4 * kBlockBytes, 5 * kBlockBytes, 6 * kBlockBytes, 7 * kBlockBytes,
                        8 * kBlockBytes, 9 * kBlockBytes, 10 * kBlockBytes, 11 * kBlockBytes,
                        12 * kBlockBytes, 13 * kBlockBytes, 14 * kBlockBytes, 15 * kBlockBytes);
  const __mmask16 lanes = static_cast<__mmask16>((1u << count) - 1u);
  return _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), lanes, offsets, first_block, 1);
}

// The f16 in the low half of each lane, as f32.
STATICLM_AVX512 __m512 LowHalves(__m512i words) {
  return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(words));
}

// Lane q holds float(q): table = iota · d + offset is the block's 16 possible weights. q · d
// is exact in f32 (4 bits × the 11 of an f16), so the one rounding of the fused multiply-add
// gives the very value the reference gets from float(q) · d + offset.
STATICLM_AVX512 __m512 Iota() {
  return _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}

// A 4-bit block: 16 bytes of nibbles looked up in the block's 16-entry table. vpermps reads
// only the low 4 bits of each index, so the low nibbles need no mask.
STATICLM_AVX512 void DecodeNibbles(const uint8_t* qs, float d, float offset, __m512 out[2]) {
  __m512 table = _mm512_fmadd_ps(Iota(), _mm512_set1_ps(d), _mm512_set1_ps(offset));
  __m512i bytes = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
  out[0] = _mm512_permutexvar_ps(bytes, table);
  out[1] = _mm512_permutexvar_ps(_mm512_srli_epi32(bytes, 4), table);
}

// Quantized blocks of kUnits units of kElements. LoadScales fills scales[k * kScaleChunk + j]
// with scale k of unit j (count units, whole blocks, from block `first`); Decode gets its
// block, a pointer to its unit's first scale and the unit's index in its block.
struct Q4_0Block {
  static constexpr int kElements = 32;
  static constexpr int kUnits = 1;
  static constexpr size_t kBytes = 18;
  static constexpr int kScales = 2;  // d, −8·d
  STATICLM_AVX512 static void LoadScales(const uint8_t* first, int count, float* scales) {
    __m512 d = LowHalves(GatherBlockWords<kBytes>(first, count));
    _mm512_storeu_ps(scales, d);
    _mm512_storeu_ps(scales + kScaleChunk, _mm512_mul_ps(d, _mm512_set1_ps(-8.0f)));
  }
  STATICLM_AVX512 static void Decode(const uint8_t* block, const float* s, int, __m512 out[2]) {
    DecodeNibbles(block + 2, s[0], s[kScaleChunk], out);
  }
};

struct Q4_1Block {
  static constexpr int kElements = 32;
  static constexpr int kUnits = 1;
  static constexpr size_t kBytes = 20;
  static constexpr int kScales = 2;  // d, m
  STATICLM_AVX512 static void LoadScales(const uint8_t* first, int count, float* scales) {
    __m512i words = GatherBlockWords<kBytes>(first, count);
    _mm512_storeu_ps(scales, LowHalves(words));
    _mm512_storeu_ps(scales + kScaleChunk, LowHalves(_mm512_srli_epi32(words, 16)));
  }
  STATICLM_AVX512 static void Decode(const uint8_t* block, const float* s, int, __m512 out[2]) {
    DecodeNibbles(block + 4, s[0], s[kScaleChunk], out);
  }
};

struct Q8_0Block {
  static constexpr int kElements = 32;
  static constexpr int kUnits = 1;
  static constexpr size_t kBytes = 34;
  static constexpr int kScales = 1;  // d
  STATICLM_AVX512 static void LoadScales(const uint8_t* first, int count, float* scales) {
    _mm512_storeu_ps(scales, LowHalves(GatherBlockWords<kBytes>(first, count)));
  }
  STATICLM_AVX512 static void Decode(const uint8_t* block, const float* s, int, __m512 out[2]) {
    __m512 d = _mm512_set1_ps(s[0]);
    for (int v = 0; v < 2; ++v) {
      __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2 + 16 * v));
      out[v] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), d);
    }
  }
};

// Q5 blocks: the nibbles plus a fifth bit from qh (bit j for element j), looked up in the
// block's 32-entry table (two vectors; vpermt2ps picks the vector by bit 4 of the index).
// q · d is exact (5 bits × 11), so table = iota · d + offset rounds once, as the reference:
// for Q5_0 the offset −16·d makes it (q − 16) · d, exact.
STATICLM_AVX512 void DecodeFiveBits(const uint8_t* qh_bytes, const uint8_t* qs, float d,
                                    float offset, __m512 out[2]) {
  const __m512 vd = _mm512_set1_ps(d), voffset = _mm512_set1_ps(offset);
  const __m512 low = _mm512_fmadd_ps(Iota(), vd, voffset);
  const __m512 high = _mm512_fmadd_ps(_mm512_add_ps(Iota(), _mm512_set1_ps(16)), vd, voffset);
  uint32_t qh;
  std::memcpy(&qh, qh_bytes, sizeof(qh));
  const __m512i bytes = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
  const __m512i sixteen = _mm512_set1_epi32(16);
  const __m512i lo = _mm512_and_si512(bytes, _mm512_set1_epi32(15));
  const __m512i hi = _mm512_srli_epi32(bytes, 4);
  const __m512i index0 = _mm512_mask_or_epi32(lo, static_cast<__mmask16>(qh), lo, sixteen);
  const __m512i index1 = _mm512_mask_or_epi32(hi, static_cast<__mmask16>(qh >> 16), hi, sixteen);
  out[0] = _mm512_permutex2var_ps(low, index0, high);
  out[1] = _mm512_permutex2var_ps(low, index1, high);
}

struct Q5_0Block {
  static constexpr int kElements = 32;
  static constexpr int kUnits = 1;
  static constexpr size_t kBytes = 22;
  static constexpr int kScales = 2;  // d, −16·d
  STATICLM_AVX512 static void LoadScales(const uint8_t* first, int count, float* scales) {
    __m512 d = LowHalves(GatherBlockWords<kBytes>(first, count));
    _mm512_storeu_ps(scales, d);
    _mm512_storeu_ps(scales + kScaleChunk, _mm512_mul_ps(d, _mm512_set1_ps(-16.0f)));
  }
  STATICLM_AVX512 static void Decode(const uint8_t* block, const float* s, int, __m512 out[2]) {
    DecodeFiveBits(block + 2, block + 6, s[0], s[kScaleChunk], out);
  }
};

struct Q5_1Block {
  static constexpr int kElements = 32;
  static constexpr int kUnits = 1;
  static constexpr size_t kBytes = 24;
  static constexpr int kScales = 2;  // d, m
  STATICLM_AVX512 static void LoadScales(const uint8_t* first, int count, float* scales) {
    __m512i words = GatherBlockWords<kBytes>(first, count);
    _mm512_storeu_ps(scales, LowHalves(words));
    _mm512_storeu_ps(scales + kScaleChunk, LowHalves(_mm512_srli_epi32(words, 16)));
  }
  STATICLM_AVX512 static void Decode(const uint8_t* block, const float* s, int, __m512 out[2]) {
    DecodeFiveBits(block + 4, block + 8, s[0], s[kScaleChunk], out);
  }
};

// K-quants: a chunk of 16 units is two super-blocks (count is 8 when only one is left). Lane
// j of each vector below belongs to unit j, sub-block j % 8 of super-block j / 8.
constexpr int kSubBlocks = 8;

// Broadcasts the 32-bit word at the start of each super-block to its 8 lanes.
STATICLM_AVX512 __m512i SuperBlockWords(uint32_t first, uint32_t second) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi32(static_cast<int>(first))),
                            _mm256_set1_epi32(static_cast<int>(second)), 1);
}

// 16 unsigned bytes as f32.
STATICLM_AVX512 __m512 BytesToFloats(const uint8_t* bytes) {
  return _mm512_cvtepi32_ps(
      _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes))));
}

// Q4_K and Q5_K: scales[j] = d · sc and scales[16 + j] = −(dmin · m) of unit j, each the
// reference's one rounded product (the negation is exact, and keeps the sign of a zero).
template <size_t kBytes>
STATICLM_AVX512 void LoadSubBlockScales(const uint8_t* first, int count, float* scales) {
  alignas(16) uint8_t sc[16] = {}, m[16] = {};
  uint32_t words[2] = {0, 0};  // f16 d | f16 dmin << 16
  for (int b = 0; b < count / kSubBlocks; ++b) {
    const uint8_t* block = first + b * kBytes;
    std::memcpy(&words[b], block, sizeof(words[b]));
    kquant::UnpackScalesAndMins(block + 4, sc + kSubBlocks * b, m + kSubBlocks * b);
  }
  const __m512i dd = SuperBlockWords(words[0], words[1]);
  const __m512 d = LowHalves(dd);
  const __m512 neg_dmin = _mm512_castsi512_ps(_mm512_xor_si512(
      _mm512_castps_si512(LowHalves(_mm512_srli_epi32(dd, 16))), _mm512_set1_epi32(INT32_MIN)));
  _mm512_storeu_ps(scales, _mm512_mul_ps(d, BytesToFloats(sc)));
  _mm512_storeu_ps(scales + kScaleChunk, _mm512_mul_ps(neg_dmin, BytesToFloats(m)));
}

// The 32 4-bit values of a Q4_K or Q5_K unit: sub-blocks 2g and 2g + 1 share 32 bytes, low
// nibbles then high. vpermps and vpermt2ps read only the index bits they need, so the low
// nibbles need no mask where no fifth bit is added.
STATICLM_AVX512 void SubBlockNibbles(const uint8_t* qs, int unit, __m512i nibbles[2]) {
  const uint8_t* bytes = qs + 32 * (unit / 2);
  const __m128i shift = _mm_cvtsi32_si128(4 * (unit % 2));
  for (int v = 0; v < 2; ++v) {
    __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes + 16 * v));
    nibbles[v] = _mm512_srl_epi32(_mm512_cvtepu8_epi32(raw), shift);
  }
}

// value = (d · sc) · q − dmin · m: (d · sc) · q is exact (17 bits × 5), so one fused
// multiply-add per table entry rounds as the reference's subtraction does.
struct Q4_KBlock {
  static constexpr int kElements = 32;
  static constexpr int kUnits = kSubBlocks;
  static constexpr size_t kBytes = 144;
  static constexpr int kScales = 2;  // d · sc, −dmin · m
  STATICLM_AVX512 static void LoadScales(const uint8_t* first, int count, float* scales) {
    LoadSubBlockScales<kBytes>(first, count, scales);
  }
  STATICLM_AVX512 static void Decode(const uint8_t* block, const float* s, int unit,
                                     __m512 out[2]) {
    const __m512 table =
        _mm512_fmadd_ps(Iota(), _mm512_set1_ps(s[0]), _mm512_set1_ps(s[kScaleChunk]));
    __m512i q[2];
    SubBlockNibbles(block + 16, unit, q);
    out[0] = _mm512_permutexvar_ps(q[0], table);
    out[1] = _mm512_permutexvar_ps(q[1], table);
  }
};

struct Q5_KBlock {
  static constexpr int kElements = 32;
  static constexpr int kUnits = kSubBlocks;
  static constexpr size_t kBytes = 176;
  static constexpr int kScales = 2;  // d · sc, −dmin · m
  STATICLM_AVX512 static void LoadScales(const uint8_t* first, int count, float* scales) {
    LoadSubBlockScales<kBytes>(first, count, scales);
  }
  STATICLM_AVX512 static void Decode(const uint8_t* block, const float* s, int unit,
                                     __m512 out[2]) {
    const __m512 scale = _mm512_set1_ps(s[0]), offset = _mm512_set1_ps(s[kScaleChunk]);
    const __m512 low = _mm512_fmadd_ps(Iota(), scale, offset);
    const __m512 high = _mm512_fmadd_ps(_mm512_add_ps(Iota(), _mm512_set1_ps(16)), scale, offset);
    __m512i q[2];
    SubBlockNibbles(block + 48, unit, q);
    const __m128i bit = _mm_set1_epi8(static_cast<char>(1 << unit));
    for (int v = 0; v < 2; ++v) {
      // Element k's fifth bit is bit `unit` of qh[k].
      __m128i qh = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 16 + 16 * v));
      __m512i nibble = _mm512_and_si512(q[v], _mm512_set1_epi32(15));
      __m512i index =
          _mm512_mask_or_epi32(nibble, _mm_test_epi8_mask(qh, bit), nibble, _mm512_set1_epi32(16));
      out[v] = _mm512_permutex2var_ps(low, index, high);
    }
  }
};

// Q6_K: 16 scales of 16 elements, so each vector of a unit has one: scales[j] = d · scales[2u]
// and scales[16 + j] = d · scales[2u + 1] for unit j, sub-block u of its super-block.
struct Q6_KBlock {
  static constexpr int kElements = 32;
  static constexpr int kUnits = kSubBlocks;
  static constexpr size_t kBytes = 210;
  static constexpr int kScales = 2;  // d · scales[2u], d · scales[2u + 1]
  STATICLM_AVX512 static void LoadScales(const uint8_t* first, int count, float* scales) {
    __m512 v[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int b = 0; b < count / kSubBlocks; ++b) {
      const uint8_t* block = first + b * kBytes;
      uint16_t d;
      std::memcpy(&d, block + 208, sizeof(d));
      __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 192));
      v[b] = _mm512_mul_ps(_mm512_cvtph_ps(_mm256_set1_epi16(static_cast<short>(d))),
                           _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(sc)));
    }
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    _mm512_storeu_ps(scales, _mm512_permutex2var_ps(v[0], even, v[1]));
    _mm512_storeu_ps(scales + kScaleChunk, _mm512_permutex2var_ps(v[0], odd, v[1]));
  }
  // Unit u is elements 32(u % 4) ... of half u / 4: the low 4 bits are the low (u % 4 < 2) or
  // high nibbles of 32 bytes of the half's ql, the high 2 bits are bits 2(u % 4) of its qh.
  STATICLM_AVX512 static void Decode(const uint8_t* block, const float* s, int unit,
                                     __m512 out[2]) {
    const int half = unit / 4, run = unit % 4;
    const uint8_t* ql = block + 64 * half + 32 * (run % 2);
    const uint8_t* qh = block + 128 + 32 * half;
    const __m128i low_shift = _mm_cvtsi32_si128(4 * (run / 2));
    const __m128i high_shift = _mm_cvtsi32_si128(2 * run);
    for (int v = 0; v < 2; ++v) {
      __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(ql + 16 * v));
      __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qh + 16 * v));
      lo = _mm_and_si128(_mm_srl_epi16(lo, low_shift), _mm_set1_epi8(15));
      hi = _mm_and_si128(_mm_srl_epi16(hi, high_shift), _mm_set1_epi8(3));
      __m128i q = _mm_sub_epi8(_mm_or_si128(lo, _mm_slli_epi16(hi, 4)), _mm_set1_epi8(32));
      out[v] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)),
                             _mm512_set1_ps(s[v * kScaleChunk]));
    }
  }
};

// Plain types: a step is 16 elements; the last partial step is read with a lane mask.
struct F32Block {
  static constexpr size_t kBytes = 64;
  STATICLM_AVX512 static __m512 Decode(const uint8_t* p) { return _mm512_loadu_ps(p); }
  STATICLM_AVX512 static __m512 DecodeTail(const uint8_t* p, __mmask16 mask) {
    return _mm512_maskz_loadu_ps(mask, p);
  }
};

struct F16Block {
  static constexpr size_t kBytes = 32;
  STATICLM_AVX512 static __m512 Decode(const uint8_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  STATICLM_AVX512 static __m512 DecodeTail(const uint8_t* p, __mmask16 mask) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, p));
  }
};

struct BF16Block {
  static constexpr size_t kBytes = 32;
  STATICLM_AVX512 static __m512 Widen(__m256i bits) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
  }
  STATICLM_AVX512 static __m512 Decode(const uint8_t* p) {
    return Widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  STATICLM_AVX512 static __m512 DecodeTail(const uint8_t* p, __mmask16 mask) {
    return Widen(_mm256_maskz_loadu_epi16(mask, p));
  }
};

// Fixed pairing (halves, then quarters, ...) so every output is reduced the same way.
STATICLM_AVX512 float ReduceAdd(__m512 v) {
  __m256 lo = _mm512_castps512_ps256(v);
  __m256 hi = _mm512_castps512_ps256(_mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(3, 2, 3, 2)));
  __m256 s8 = _mm256_add_ps(lo, hi);
  __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
  return _mm_cvtss_f32(s1);
}

// Every output (o, r) owns accumulator acc[o][r] and sees the same operations in the same
// order whatever the tile shape: that is what makes results independent of tiling.
template <int O, int R>
STATICLM_AVX512 void StoreSums(const TileArgs& a, __m512 (&acc)[O][R]) {
  for (int r = 0; r < R; ++r) {
    for (int o = 0; o < O; ++o) a.y[r * a.n_out + o] = ReduceAdd(acc[o][r]);
  }
}

template <class B>
struct QuantizedTiles {
  template <int O, int R>
  STATICLM_AVX512_KERNEL static void Run(const TileArgs& a) {
    __m512 acc[O][R];
    for (int o = 0; o < O; ++o) {
      for (int r = 0; r < R; ++r) acc[o][r] = _mm512_setzero_ps();
    }
    alignas(64) float scales[O][B::kScales * kScaleChunk];
    const int64_t units = a.n_in / B::kElements;
    const int64_t chunks = (units + kScaleChunk - 1) / kScaleChunk;
    for (int64_t u0 = 0; u0 < units; u0 += kScaleChunk) {
      if constexpr (R == 1) tiles::PrefetchTileAhead<O>(a, u0 / kScaleChunk, chunks);
      const int count = static_cast<int>(units - u0 < kScaleChunk ? units - u0 : kScaleChunk);
      const uint8_t* chunk = a.w + u0 / B::kUnits * B::kBytes;
      for (int o = 0; o < O; ++o) B::LoadScales(chunk + o * a.row_bytes, count, scales[o]);
      // The units of a block in an unrolled loop: a K-quant's sub-block index is then a
      // constant, and the shifts and offsets that depend on it immediates. ~1.1-1.25× on the
      // Q4_K and Q6_K shapes of bench/matmul_bench (AVX2 measured slower so: not there).
      for (int j0 = 0; j0 < count; j0 += B::kUnits) {
        const uint8_t* block = chunk + j0 / B::kUnits * B::kBytes;
#pragma GCC unroll 8
        for (int unit = 0; unit < B::kUnits; ++unit) {
          const int j = j0 + unit;
          __m512 w[O][2];
#pragma GCC unroll 8
          for (int o = 0; o < O; ++o) {
            B::Decode(block + o * a.row_bytes, &scales[o][j], unit, w[o]);
          }
          const float* x = a.x + (u0 + j) * B::kElements;
#pragma GCC unroll 2
          for (int v = 0; v < 2; ++v) {
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
              __m512 xv = _mm512_loadu_ps(x + r * a.n_in + 16 * v);
#pragma GCC unroll 8
              for (int o = 0; o < O; ++o) acc[o][r] = _mm512_fmadd_ps(w[o][v], xv, acc[o][r]);
            }
          }
        }
      }
    }
    StoreSums(a, acc);
  }
};

// Plain types: steps of 16 elements; the last partial step is read with a lane mask (masked
// lanes load as 0 and add nothing).
template <class B>
struct PlainTiles {
  template <int O, int R>
  STATICLM_AVX512_KERNEL static void Run(const TileArgs& a) {
    __m512 acc[O][R];
    for (int o = 0; o < O; ++o) {
      for (int r = 0; r < R; ++r) acc[o][r] = _mm512_setzero_ps();
    }
    const int64_t steps = a.n_in / 16;
    for (int64_t s = 0; s < steps; ++s) {
      __m512 w[O];
#pragma GCC unroll 8
      for (int o = 0; o < O; ++o) w[o] = B::Decode(a.w + o * a.row_bytes + s * B::kBytes);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        __m512 xv = _mm512_loadu_ps(a.x + r * a.n_in + s * 16);
#pragma GCC unroll 8
        for (int o = 0; o < O; ++o) acc[o][r] = _mm512_fmadd_ps(w[o], xv, acc[o][r]);
      }
    }
    const int rest = static_cast<int>(a.n_in - steps * 16);
    if (rest > 0) {
      const __mmask16 mask = static_cast<__mmask16>((1u << rest) - 1u);
      __m512 w[O];
      for (int o = 0; o < O; ++o) {
        w[o] = B::DecodeTail(a.w + o * a.row_bytes + steps * B::kBytes, mask);
      }
      for (int r = 0; r < R; ++r) {
        __m512 xv = _mm512_maskz_loadu_ps(mask, a.x + r * a.n_in + steps * 16);
        for (int o = 0; o < O; ++o) acc[o][r] = _mm512_fmadd_ps(w[o], xv, acc[o][r]);
      }
    }
    StoreSums(a, acc);
  }
};

// Tile shapes, found by measurement: one row wants many weight rows in flight; several rows
// want 4 × 4, which keeps 16 accumulators and 8 decoded vectors within the 32 registers.
template <class B, template <class> class Kernel>
struct Shaped : Kernel<B> {
  static constexpr int kMaxRows = 4;
  static constexpr int kMaxOutputs = 4;
  static constexpr int kMaxOutputsOneRow = 8;
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

void MatMulRangeAvx512(DType type, const uint8_t* w, int64_t n_out, int64_t n_in, const float* x,
                       int64_t rows, float* y, int64_t o_begin, int64_t o_end) {
  TileArgs whole{w, DTypeBytes(type, static_cast<uint64_t>(n_in)), x, n_in, y, n_out};
  if (!tiles::DriveByType<Kernels>(type, whole, rows, o_begin, o_end)) {
    ref::MatMulColumns(type, w, n_out, n_in, x, rows, y, o_begin, o_end);
  }
}

}  // namespace staticlm::cpu::detail

#endif  // defined(__x86_64__)
