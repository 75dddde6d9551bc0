// AVX-512 VNNI products of int8 activations with Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q6_K, Q4_K or Q5_K
// weights in the x16 packed layout (packed_weights.h). Each step of a block gives 4 consecutive
// values of each of 16 output rows as unsigned bytes, one row per 32-bit lane, so one vpdpbusd
// against the 4 activations broadcast adds them into each row's own lane: no gathers, no cross-lane
// reduction, and the weights are read front to back. The arithmetic per block is matmul_int8.h's,
// bit for bit (integer dot of u = w + offset, minus offset · Σx, then dw · dx · dot added in block
// order).
#include "backends/cpu/matmul_int8.h"
#include "backends/cpu/matmul_packed_drive.h"
#include "backends/cpu/packed_weights.h"

#if defined(__x86_64__)

#include "backends/cpu/arch/x86/avx512_intrinsics.h"
#include "backends/cpu/arch/x86/int8_sums.h"

#include <cstring>

namespace staticlm::cpu::detail {
namespace {

constexpr int kMaxRows = 8;  // activation rows sharing each loaded weight chunk
// How far ahead of the values being read the software prefetch runs: on into the next group
// (contiguous), so a task's stream does not wait for the hardware prefetchers to pick it up
// again at each page. On 4 KiB pages the distance made no difference (the page walks were the
// limit); since the packed weights sit on huge pages it does. Zen 4, one core, packed products
// from memory (matmul_int8_bench, huge pages): 4 KiB ahead read 15-22 GB/s, 8 KiB 16-26,
// 12 KiB 18-26, 16 KiB 19-27, 24-32 KiB less again; with the T1 or NTA hint, or none, less
// than T0. Decode with 12 KiB, 2 threads, alternating rounds against 4 KiB: Gemma 3 +19 %,
// SmolLM2 +6 % (bench/results/2026-11-27e-zen4-prefetch-distance.txt). 12 KiB stays well
// inside a 32 KiB L1 while the lines wait to be read.
constexpr size_t kPrefetchAhead = 12288;

// The 16 rows' f16 scales at p, as f32.
STATICLM_VNNI __m512 LoadScales(const uint8_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// The low (s even) or high (s odd) nibbles of chunk s / 2 of a block's nibbles (Q5_0's order):
// values 4s … 4s + 3 of each row.
STATICLM_VNNI __m512i Nibbles(const uint8_t* nibbles, int s) {
  const __m512i chunk = _mm512_loadu_si512(nibbles + 64 * (s / 2));
  return _mm512_and_si512(s % 2 == 0 ? chunk : _mm512_srli_epi16(chunk, 4), _mm512_set1_epi8(0x0f));
}

// The scales of Q8_0: dw of block b, 32 bytes per block at the group's start; no m.
struct BlockScales {
  static constexpr bool kSubBlockScales = false;
  static constexpr bool kHasMin = false;
  STATICLM_VNNI static void Scales(const uint8_t* group, int64_t, int64_t b, __m512* dw,
                                   __m512* m) {
    *dw = LoadScales(group + static_cast<size_t>(b) * kPackedScales);
    *m = _mm512_setzero_ps();
  }
};

// Q8_0: step s is chunk s of the block's quants, made unsigned (u = wq + 128).
struct Q8_0Steps : BlockScales {
  static constexpr int32_t kOffset = 128;
  static constexpr size_t kBlockBytes = kPackedQ8_0Block;
  const uint8_t* quants;
  STATICLM_VNNI Q8_0Steps(const uint8_t* group, int64_t blocks, int64_t b)
      : quants(group + static_cast<size_t>(blocks) * kPackedScales + static_cast<size_t>(b) * 512) {
  }
  STATICLM_VNNI __m512i Step(int s) const {
    return _mm512_xor_si512(_mm512_loadu_si512(quants + 64 * s),
                            _mm512_set1_epi8(static_cast<char>(0x80)));
  }
};

// Bit 4 of each byte of step s (values 4s … 4s + 3 of each row) from the rows' 32-bit high-bit
// words qh: bits 4s … 4s + 3 of a row's word, spread one to a byte by a 16-entry table (vpermd
// takes an index's low 4 bits).
STATICLM_VNNI __m512i FifthBits(__m512i qh, int s) {
  const __m512i spread =
      _mm512_setr_epi32(0x00000000, 0x00000010, 0x00001000, 0x00001010, 0x00100000, 0x00100010,
                        0x00101000, 0x00101010, 0x10000000, 0x10000010, 0x10001000, 0x10001010,
                        0x10100000, 0x10100010, 0x10101000, 0x10101010);
  return _mm512_permutexvar_epi32(_mm512_srli_epi32(qh, 4 * s), spread);
}

// Q4_0, Q4_1, Q5_0 and Q5_1 (packed_drive::LegacyTraits): dw = d and m = the f16 m of block b
// (0 without a min); step s is the low (s even) or high (s odd) nibbles of chunk s / 2, with a
// fifth bit from the rows' qh words (FifthBits) for Q5_0 and Q5_1.
template <DType kType>
struct LegacySteps : packed_drive::LegacyTraits<kType> {
  using T = packed_drive::LegacyTraits<kType>;
  const uint8_t* nibbles;
  __m512i qh;
  STATICLM_VNNI LegacySteps(const uint8_t* group, int64_t blocks, int64_t b) {
    const size_t n = static_cast<size_t>(blocks), block = static_cast<size_t>(b);
    const uint8_t* high_bits = group + n * T::kLayout.scales;
    nibbles = high_bits + n * T::kLayout.high_bits + block * kPackedNibbles;
    qh = T::kFifth ? _mm512_loadu_si512(high_bits + block * T::kLayout.high_bits)
                   : _mm512_setzero_si512();
  }
  STATICLM_VNNI static void Scales(const uint8_t* group, int64_t, int64_t b, __m512* dw,
                                   __m512* m) {
    const uint8_t* scales = group + static_cast<size_t>(b) * T::kLayout.scales;
    *dw = LoadScales(scales);
    *m = T::kHasMin ? LoadScales(scales + kPackedScales) : _mm512_setzero_ps();
  }
  STATICLM_VNNI __m512i Step(int s) const {
    const __m512i low4 = Nibbles(nibbles, s);
    if constexpr (!T::kFifth) return low4;
    return _mm512_or_si512(low4, FifthBits(qh, s));
  }
};

// Q6_K: dw = the super-block's d; step s is the low (s even) or high (s odd) nibbles of chunk
// s / 2 with bits 4-5 from bits 2 (s % 4), +1 of high-bit chunk s / 4, moved there by a shift
// (any bits it carries across bytes are masked off). u = q6 = wq + 32. Steps 0-3 are the values
// of the block's first scale, 4-7 of its second (kSubBlockScales: sa, sb, one lane per row).
struct Q6_KSteps {
  static constexpr int32_t kOffset = 32;
  static constexpr size_t kBlockBytes = kPackedQ6_KBlock;
  static constexpr bool kSubBlockScales = true;
  static constexpr bool kHasMin = false;
  const uint8_t* nibbles;
  const uint8_t* high_bits;
  __m512i sa, sb;
  STATICLM_VNNI Q6_KSteps(const uint8_t* group, int64_t blocks, int64_t b) {
    const PackedQ6KSections at = Q6KSections(blocks);
    const size_t block = static_cast<size_t>(b);
    nibbles = group + at.nibbles + 256 * block;
    high_bits = group + at.high_bits + 128 * block;
    const uint8_t* scales = group + at.scales + 32 * block;
    sa = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales)));
    sb = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + 16)));
  }
  STATICLM_VNNI static void Scales(const uint8_t* group, int64_t, int64_t b, __m512* dw,
                                   __m512* m) {
    *dw = LoadScales(group + static_cast<size_t>(b / 8) * kPackedScales);
    *m = _mm512_setzero_ps();
  }
  STATICLM_VNNI __m512i Step(int s) const {
    const __m512i low4 = Nibbles(nibbles, s);
    const __m512i high = _mm512_loadu_si512(high_bits + 64 * (s / 4));
    // Bits 2 (s % 4), +1 of each byte moved to bits 4-5 (what else moves is masked off); the
    // shift is a constant once the steps are unrolled.
    const int up = 4 - 2 * (s % 4);
    const __m512i at45 = up >= 0 ? _mm512_slli_epi16(high, up) : _mm512_srli_epi16(high, -up);
    // low4 | (at45 & 0x30)
    return _mm512_ternarylogic_epi32(low4, at45, _mm512_set1_epi8(0x30), 0xf8);
  }
};

// The 16 unsigned bytes at p as f32.
STATICLM_VNNI __m512 BytesAsFloats(const uint8_t* p) {
  return _mm512_cvtepi32_ps(
      _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}

// dw = d · sc and m = −(dmin · min) of block b of Q4_K or Q5_K (d and dmin 64 bytes per
// super-block at the group's start, the scales section at `scales`; exact products, as the
// reference's).
STATICLM_VNNI void KQuantMinScales(const uint8_t* group, size_t scales, int64_t b, __m512* dw,
                                   __m512* m) {
  const uint8_t* d = group + 64 * static_cast<size_t>(b / 8);
  const uint8_t* sc = group + scales + 32 * static_cast<size_t>(b);
  const __m512 neg_dmin = _mm512_castsi512_ps(
      _mm512_xor_si512(_mm512_castps_si512(LoadScales(d + 32)), _mm512_set1_epi32(INT32_MIN)));
  *dw = _mm512_mul_ps(LoadScales(d), BytesAsFloats(sc));
  *m = _mm512_mul_ps(neg_dmin, BytesAsFloats(sc + 16));
}

// Q4_K: dw = d · sc and m = −(dmin · min) of block b (the super-block's f16 d and dmin, the
// block's 6-bit sc and min bytes, one lane per row: exact products, as the reference's); step s
// is the nibbles of Nibbles (u = wq).
struct Q4_KSteps {
  static constexpr int32_t kOffset = 0;
  static constexpr size_t kBlockBytes = kPackedQ4_KBlock;
  static constexpr bool kSubBlockScales = false;
  static constexpr bool kHasMin = true;
  const uint8_t* nibbles;
  STATICLM_VNNI Q4_KSteps(const uint8_t* group, int64_t blocks, int64_t b)
      : nibbles(group + Q4KSections(blocks).nibbles + 256 * static_cast<size_t>(b)) {}
  STATICLM_VNNI static void Scales(const uint8_t* group, int64_t blocks, int64_t b, __m512* dw,
                                   __m512* m) {
    KQuantMinScales(group, Q4KSections(blocks).scales, b, dw, m);
  }
  STATICLM_VNNI __m512i Step(int s) const { return Nibbles(nibbles, s); }
};

// Q5_K: dw and m as Q4_K's (its sections at Q5KSections); step s is the nibbles of Nibbles with
// the fifth bit of FifthBits (u = wq).
struct Q5_KSteps {
  static constexpr int32_t kOffset = 0;
  static constexpr size_t kBlockBytes = kPackedQ5_KBlock;
  static constexpr bool kSubBlockScales = false;
  static constexpr bool kHasMin = true;
  const uint8_t* nibbles;
  __m512i qh;
  STATICLM_VNNI Q5_KSteps(const uint8_t* group, int64_t blocks, int64_t b) {
    const PackedQ5KSections at = Q5KSections(blocks);
    nibbles = group + at.nibbles + 256 * static_cast<size_t>(b);
    qh = _mm512_loadu_si512(group + at.high_bits + 64 * static_cast<size_t>(b));
  }
  STATICLM_VNNI static void Scales(const uint8_t* group, int64_t blocks, int64_t b, __m512* dw,
                                   __m512* m) {
    KQuantMinScales(group, Q5KSections(blocks).scales, b, dw, m);
  }
  STATICLM_VNNI __m512i Step(int s) const {
    return _mm512_or_si512(Nibbles(nibbles, s), FifthBits(qh, s));
  }
};

// Rows [r0, r0 + R) × one group of 16 output columns at `group`; y points at (r0, column 0);
// only the first `count` columns are stored.
template <class B, int R>
STATICLM_VNNI_KERNEL void RunPackedTile(const uint8_t* group, int64_t blocks,
                                        const QuantizedActivations& x, int64_t r0, float* y,
                                        int64_t n_out, int count) {
  const __mmask16 lanes = static_cast<__mmask16>((1u << count) - 1u);
  const int8_t* q = static_cast<const int8_t*>(x.q);
  __m512 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    __m512 dw, m;
    B::Scales(group, blocks, b, &dw, &m);
    // The group's bytes in memory order, kPrefetchAhead ahead of block b's share of them: the
    // whole group and on into the next, with no gap where the sections meet.
    for (size_t line = 0; line < B::kBlockBytes; line += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(group + kPrefetchAhead +
                                                 static_cast<size_t>(b) * B::kBlockBytes + line),
                   _MM_HINT_T0);
    }
    const B steps(group, blocks, b);
    // Two partial sums per row: even and odd steps (two dependency chains of vpdpbusd). With
    // kSubBlockScales, steps 0-3 and 4-7 (the values of the block's two scales) sum apart, each
    // again in two chains while the registers allow (R ≤ 4).
    constexpr bool kSub = B::kSubBlockScales;
    constexpr int kChains = kSub && R <= 4 ? 4 : 2;
    __m512i dot[R][kChains];
    for (int r = 0; r < R; ++r) {
      for (int k = 0; k < kChains; ++k) dot[r][k] = _mm512_setzero_si512();
    }
#pragma GCC unroll 8
    for (int s = 0; s < 8; ++s) {
      const __m512i w = steps.Step(s);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        int32_t four;
        std::memcpy(&four, q + ((r0 + r) * blocks + b) * kQuantBlock + 4 * s, 4);
        const int chain = !kSub ? s % 2 : kChains == 4 ? 2 * (s / 4) + s % 2 : s / 4;
        dot[r][chain] = _mm512_dpbusd_epi32(dot[r][chain], w, _mm512_set1_epi32(four));
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const int64_t xb = (r0 + r) * blocks + b;
      __m512i idot;
      if constexpr (kSub) {  // sa · (dot_a − offset · Σ q[0..15]) + sb · (the same for 16..31)
        const int32_t sum_a = SumInt8x16(q + xb * kQuantBlock), sum_b = x.sum[xb] - sum_a;
        const __m512i dot_a = kChains == 4 ? _mm512_add_epi32(dot[r][0], dot[r][1]) : dot[r][0];
        const __m512i dot_b =
            kChains == 4 ? _mm512_add_epi32(dot[r][2], dot[r][kChains - 1]) : dot[r][1];
        const __m512i a = _mm512_sub_epi32(dot_a, _mm512_set1_epi32(B::kOffset * sum_a));
        const __m512i c = _mm512_sub_epi32(dot_b, _mm512_set1_epi32(B::kOffset * sum_b));
        idot = _mm512_add_epi32(_mm512_mullo_epi32(steps.sa, a), _mm512_mullo_epi32(steps.sb, c));
      } else {
        idot = _mm512_sub_epi32(_mm512_add_epi32(dot[r][0], dot[r][1]),
                                _mm512_set1_epi32(B::kOffset * x.sum[xb]));
      }
      __m512 term =
          _mm512_mul_ps(_mm512_mul_ps(dw, _mm512_set1_ps(x.d[xb])), _mm512_cvtepi32_ps(idot));
      if constexpr (B::kHasMin) {
        term = _mm512_add_ps(
            term, _mm512_mul_ps(m, _mm512_set1_ps(x.d[xb] * static_cast<float>(x.sum[xb]))));
      }
      acc[r] = _mm512_add_ps(acc[r], term);
    }
  }
  for (int r = 0; r < R; ++r) _mm512_mask_storeu_ps(y + r * n_out, lanes, acc[r]);
}

struct VnniPacked {
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

void MatMulInt8PackedRangeAvx512Vnni(DType type, const uint8_t* packed, int64_t n_out,
                                     const QuantizedActivations& x, float* y, int64_t o_begin,
                                     int64_t o_end) {
  packed_drive::MatMulRange<VnniPacked>(type, packed, n_out, x, y, o_begin, o_end);
}

}  // namespace staticlm::cpu::detail

#endif  // defined(__x86_64__)
