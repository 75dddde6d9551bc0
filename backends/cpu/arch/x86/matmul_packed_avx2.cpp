// AVX2 products of int8 activations with Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q6_K, Q4_K or Q5_K weights
// in the packed x16 layout (packed_weights.h): each step of a block is two registers of 8 output
// rows × 4 consecutive values. Q8_0 goes through vpmaddubsw as |w| against the activations with
// w's sign (at most 2 · 128 · 127 per pair, no saturation); the other types as their unsigned
// values u (at most 63: at most 2 · 63 · 127 per pair), Q6_K's u = q6 = wq + 32; vpmaddwd by ones
// then widens each row's four products into its own int32 lane. The
// arithmetic per block is matmul_int8.h's, bit for bit.
#include "backends/cpu/matmul_int8.h"
#include "backends/cpu/matmul_packed_drive.h"
#include "backends/cpu/packed_weights.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include "backends/cpu/arch/x86/int8_sums.h"

#include <cstring>

#define STATICLM_AVX2 __attribute__((target("avx2,fma,f16c"), always_inline)) inline
#define STATICLM_AVX2_KERNEL __attribute__((target("avx2,fma,f16c")))

namespace staticlm::cpu::detail {
namespace {

constexpr int kMaxRows = 4;  // activation rows sharing each loaded weight chunk (16 ymm live)
// The software prefetch distance: as in matmul_packed_avx512vnni.cpp (with AVX2 on Zen 4:
// SmolLM2 decode +5 %, Gemma 3 +2 % against 4 KiB, alternating rounds).
constexpr size_t kPrefetchAhead = 12288;

// Σ of 4 products per 32-bit lane: the byte pairs of vpmaddubsw, then pairs of those.
STATICLM_AVX2 __m256i Dot4(__m256i u, __m256i x) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, x), _mm256_set1_epi16(1));
}

// The f16 scales of rows 8h … 8h + 7 at p, as f32.
STATICLM_AVX2 void LoadScales(const uint8_t* p, __m256 dw[2]) {
  for (int h = 0; h < 2; ++h) {
    dw[h] = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * h)));
  }
}

// The low (s even) or high (s odd) nibbles of chunk s / 2 of a block's nibbles (Q5_0's order),
// rows 8h … 8h + 7: values 4s … 4s + 3 of each.
STATICLM_AVX2 __m256i Nibbles(const uint8_t* nibbles, int s, int h) {
  const __m256i chunk =
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(nibbles + 64 * (s / 2) + 32 * h));
  return _mm256_and_si256(s % 2 == 0 ? chunk : _mm256_srli_epi16(chunk, 4), _mm256_set1_epi8(0x0f));
}

// The scales of Q8_0: dw of block b, 32 bytes per block at the group's start; no m.
struct BlockScales {
  static constexpr bool kSubBlockScales = false;
  static constexpr bool kHasMin = false;
  STATICLM_AVX2 static void Scales(const uint8_t* group, int64_t, int64_t b, __m256 dw[2],
                                   __m256 m[2]) {
    LoadScales(group + static_cast<size_t>(b) * kPackedScales, dw);
    m[0] = m[1] = _mm256_setzero_ps();
  }
};

// Q8_0: step s, half h is rows 8h … 8h + 7 of chunk s; signed weights, the sign moved to x.
struct Q8_0Steps : BlockScales {
  static constexpr int32_t kOffset = 0;
  static constexpr size_t kBlockBytes = kPackedQ8_0Block;
  const uint8_t* quants;
  STATICLM_AVX2 Q8_0Steps(const uint8_t* group, int64_t blocks, int64_t b)
      : quants(group + static_cast<size_t>(blocks) * kPackedScales + static_cast<size_t>(b) * 512) {
  }
  template <int R>
  STATICLM_AVX2 __m256i Step(int s, int h) const {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(quants + 64 * s + 32 * h));
  }
  STATICLM_AVX2 static __m256i Dot(__m256i w, __m256i x) {
    return Dot4(_mm256_abs_epi8(w), _mm256_sign_epi8(x, w));
  }
};

// Bit 4 of each byte of step s (values 4s … 4s + 3 of each of 8 rows) from the rows' 32-bit
// high-bit words qh. Decode (R = 1 activation row): byte s / 2 of a row's word copied to its
// four bytes (vpshufb within the lane), byte j tested against bit 4 (s % 2) + j, 0x10 where set —
// four single-cycle instructions, 24-27 % faster in cache for Q5_0, Q5_1 and Q5_K than the
// multiply below (matmul_int8_bench --isa avx2 --shapes types --pool-mib 1, one Emerald Rapids
// core). With R > 1 rows sharing each step its constants would not fit beside the R rows'
// accumulators (prefill measured 23 % slower), so there bits 4s … 4s + 3 are spread by a
// multiply: t · 0x02040810 puts bit j of t at bit 8j + 4, no two terms overlapping.
template <int R>
STATICLM_AVX2 __m256i FifthBits(__m256i qh, int s) {
  if constexpr (R == 1) {
    const char k = static_cast<char>(s / 2);
    const __m256i copy = _mm256_broadcastsi128_si256(
        _mm_setr_epi8(k, k, k, k, k + 4, k + 4, k + 4, k + 4, k + 8, k + 8, k + 8, k + 8, k + 12,
                      k + 12, k + 12, k + 12));
    const __m256i bit = _mm256_set1_epi32(s % 2 == 0 ? 0x08040201 : static_cast<int>(0x80402010));
    const __m256i tested = _mm256_and_si256(_mm256_shuffle_epi8(qh, copy), bit);
    return _mm256_and_si256(_mm256_cmpeq_epi8(tested, bit), _mm256_set1_epi8(0x10));
  } else {
    const __m256i t = _mm256_and_si256(_mm256_srli_epi32(qh, 4 * s), _mm256_set1_epi32(0x0f));
    return _mm256_and_si256(_mm256_mullo_epi32(t, _mm256_set1_epi32(0x02040810)),
                            _mm256_set1_epi32(0x10101010));
  }
}

// Q4_0, Q4_1, Q5_0 and Q5_1 as in the VNNI file (packed_drive::LegacyTraits); step s, half h:
// the low (s even) or high (s odd) nibbles of chunk s / 2's rows 8h … 8h + 7, with a fifth bit
// from the row's qh word (FifthBits) for Q5_0 and Q5_1.
template <DType kType>
struct LegacySteps : packed_drive::LegacyTraits<kType> {
  using T = packed_drive::LegacyTraits<kType>;
  const uint8_t* nibbles;
  __m256i qh[2];
  STATICLM_AVX2 LegacySteps(const uint8_t* group, int64_t blocks, int64_t b) {
    const size_t n = static_cast<size_t>(blocks), block = static_cast<size_t>(b);
    const uint8_t* high_bits = group + n * T::kLayout.scales;
    nibbles = high_bits + n * T::kLayout.high_bits + block * kPackedNibbles;
    for (int h = 0; h < 2; ++h) {
      qh[h] = T::kFifth ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(
                              high_bits + block * T::kLayout.high_bits + 32 * h))
                        : _mm256_setzero_si256();
    }
  }
  STATICLM_AVX2 static void Scales(const uint8_t* group, int64_t, int64_t b, __m256 dw[2],
                                   __m256 m[2]) {
    const uint8_t* scales = group + static_cast<size_t>(b) * T::kLayout.scales;
    LoadScales(scales, dw);
    if constexpr (T::kHasMin) {
      LoadScales(scales + kPackedScales, m);
    } else {
      m[0] = m[1] = _mm256_setzero_ps();
    }
  }
  template <int R>
  STATICLM_AVX2 __m256i Step(int s, int h) const {
    const __m256i low4 = Nibbles(nibbles, s, h);
    if constexpr (!T::kFifth) return low4;
    return _mm256_or_si256(low4, FifthBits<R>(qh[h], s));
  }
  STATICLM_AVX2 static __m256i Dot(__m256i u, __m256i x) { return Dot4(u, x); }
};

// Q6_K as in the VNNI file: dw = the super-block's d; step s, half h: the low (s even) or high
// (s odd) nibbles of chunk s / 2's rows 8h … 8h + 7, with bits 4-5 from bits 2 (s % 4), +1 of
// high-bit chunk s / 4. Steps 0-3 carry the block's first scale (sa), 4-7 its second (sb).
struct Q6_KSteps {
  static constexpr int32_t kOffset = 32;
  static constexpr size_t kBlockBytes = kPackedQ6_KBlock;
  static constexpr bool kSubBlockScales = true;
  static constexpr bool kHasMin = false;
  const uint8_t* nibbles;
  const uint8_t* high_bits;
  __m256i sa[2], sb[2];  // rows 8h … 8h + 7
  STATICLM_AVX2 Q6_KSteps(const uint8_t* group, int64_t blocks, int64_t b) {
    const PackedQ6KSections at = Q6KSections(blocks);
    const size_t block = static_cast<size_t>(b);
    nibbles = group + at.nibbles + 256 * block;
    high_bits = group + at.high_bits + 128 * block;
    const uint8_t* scales = group + at.scales + 32 * block;
    for (int h = 0; h < 2; ++h) {
      sa[h] =
          _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(scales + 8 * h)));
      sb[h] = _mm256_cvtepi8_epi32(
          _mm_loadl_epi64(reinterpret_cast<const __m128i*>(scales + 16 + 8 * h)));
    }
  }
  STATICLM_AVX2 static void Scales(const uint8_t* group, int64_t, int64_t b, __m256 dw[2],
                                   __m256 m[2]) {
    LoadScales(group + static_cast<size_t>(b / 8) * kPackedScales, dw);
    m[0] = m[1] = _mm256_setzero_ps();
  }
  template <int R>
  STATICLM_AVX2 __m256i Step(int s, int h) const {
    const __m256i low4 = Nibbles(nibbles, s, h);
    const __m256i high =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(high_bits + 64 * (s / 4) + 32 * h));
    // Bits 2 (s % 4), +1 of each byte moved to bits 4-5 (what else moves is masked off); the
    // shift is a constant once the steps are unrolled.
    const int up = 4 - 2 * (s % 4);
    const __m256i at45 = up >= 0 ? _mm256_slli_epi16(high, up) : _mm256_srli_epi16(high, -up);
    return _mm256_or_si256(low4, _mm256_and_si256(at45, _mm256_set1_epi8(0x30)));
  }
  STATICLM_AVX2 static __m256i Dot(__m256i u, __m256i x) { return Dot4(u, x); }
};

// The 8 unsigned bytes at p as f32.
STATICLM_AVX2 __m256 BytesAsFloats(const uint8_t* p) {
  return _mm256_cvtepi32_ps(
      _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

// dw = d · sc and m = −(dmin · min) of block b of Q4_K or Q5_K, rows 8h … 8h + 7 in half h (d and
// dmin 64 bytes per super-block at the group's start, the scales section at `scales`).
STATICLM_AVX2 void KQuantMinScales(const uint8_t* group, size_t scales, int64_t b, __m256 dw[2],
                                   __m256 m[2]) {
  const uint8_t* d = group + 64 * static_cast<size_t>(b / 8);
  const uint8_t* sc = group + scales + 32 * static_cast<size_t>(b);
  __m256 dd[2], dmin[2];
  LoadScales(d, dd);
  LoadScales(d + 32, dmin);
  for (int h = 0; h < 2; ++h) {
    const __m256 neg_dmin = _mm256_castsi256_ps(
        _mm256_xor_si256(_mm256_castps_si256(dmin[h]), _mm256_set1_epi32(INT32_MIN)));
    dw[h] = _mm256_mul_ps(dd[h], BytesAsFloats(sc + 8 * h));
    m[h] = _mm256_mul_ps(neg_dmin, BytesAsFloats(sc + 16 + 8 * h));
  }
}

// Q4_K as in the VNNI file: dw = d · sc and m = −(dmin · min) of block b, rows 8h … 8h + 7 in
// half h (exact products); step s is the nibbles of Nibbles (u = wq).
struct Q4_KSteps {
  static constexpr int32_t kOffset = 0;
  static constexpr size_t kBlockBytes = kPackedQ4_KBlock;
  static constexpr bool kSubBlockScales = false;
  static constexpr bool kHasMin = true;
  const uint8_t* nibbles;
  STATICLM_AVX2 Q4_KSteps(const uint8_t* group, int64_t blocks, int64_t b)
      : nibbles(group + Q4KSections(blocks).nibbles + 256 * static_cast<size_t>(b)) {}
  STATICLM_AVX2 static void Scales(const uint8_t* group, int64_t blocks, int64_t b, __m256 dw[2],
                                   __m256 m[2]) {
    KQuantMinScales(group, Q4KSections(blocks).scales, b, dw, m);
  }
  template <int R>
  STATICLM_AVX2 __m256i Step(int s, int h) const {
    return Nibbles(nibbles, s, h);
  }
  STATICLM_AVX2 static __m256i Dot(__m256i u, __m256i x) { return Dot4(u, x); }
};

// Q5_K as in the VNNI file: dw and m as Q4_K's; step s, half h: the nibbles of Nibbles with the
// fifth bit of FifthBits (u = wq).
struct Q5_KSteps {
  static constexpr int32_t kOffset = 0;
  static constexpr size_t kBlockBytes = kPackedQ5_KBlock;
  static constexpr bool kSubBlockScales = false;
  static constexpr bool kHasMin = true;
  const uint8_t* nibbles;
  __m256i qh[2];
  STATICLM_AVX2 Q5_KSteps(const uint8_t* group, int64_t blocks, int64_t b) {
    const PackedQ5KSections at = Q5KSections(blocks);
    nibbles = group + at.nibbles + 256 * static_cast<size_t>(b);
    const uint8_t* words = group + at.high_bits + 64 * static_cast<size_t>(b);
    qh[0] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words));
    qh[1] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + 32));
  }
  STATICLM_AVX2 static void Scales(const uint8_t* group, int64_t blocks, int64_t b, __m256 dw[2],
                                   __m256 m[2]) {
    KQuantMinScales(group, Q5KSections(blocks).scales, b, dw, m);
  }
  template <int R>
  STATICLM_AVX2 __m256i Step(int s, int h) const {
    return _mm256_or_si256(Nibbles(nibbles, s, h), FifthBits<R>(qh[h], s));
  }
  STATICLM_AVX2 static __m256i Dot(__m256i u, __m256i x) { return Dot4(u, x); }
};

template <class B, int R>
STATICLM_AVX2_KERNEL void RunPackedTile(const uint8_t* group, int64_t blocks,
                                        const QuantizedActivations& x, int64_t r0, float* y,
                                        int64_t n_out, int count) {
  const int8_t* q = static_cast<const int8_t*>(x.q);
  __m256 acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    __m256 dw[2], m[2];
    B::Scales(group, blocks, b, dw, m);
    // The group's bytes in memory order, kPrefetchAhead ahead of block b's share of them: the
    // whole group and on into the next, with no gap where the sections meet.
    for (size_t line = 0; line < B::kBlockBytes; line += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(group + kPrefetchAhead +
                                                 static_cast<size_t>(b) * B::kBlockBytes + line),
                   _MM_HINT_T0);
    }
    const B steps(group, blocks, b);
    // Per row and half: one sum over the steps, or with kSubBlockScales one per scale (steps
    // 0-3, 4-7), combined as sa · (dot_a − offset · Σ q[0..15]) + sb · (the same for 16..31).
    constexpr bool kSub = B::kSubBlockScales;
    constexpr int kSums = kSub ? 2 : 1;
    __m256i dot[R][2][kSums];
    for (int r = 0; r < R; ++r) {
      for (int h = 0; h < 2; ++h) {
        for (int k = 0; k < kSums; ++k) dot[r][h][k] = _mm256_setzero_si256();
      }
    }
#pragma GCC unroll 8
    for (int s = 0; s < 8; ++s) {
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const __m256i w = steps.template Step<R>(s, h);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
          int32_t four;
          std::memcpy(&four, q + ((r0 + r) * blocks + b) * kQuantBlock + 4 * s, 4);
          __m256i& sum = dot[r][h][kSub ? s / 4 : 0];
          sum = _mm256_add_epi32(sum, B::Dot(w, _mm256_set1_epi32(four)));
        }
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const int64_t xb = (r0 + r) * blocks + b;
      const __m256 dx = _mm256_set1_ps(x.d[xb]);
      const __m256i offset = _mm256_set1_epi32(B::kOffset * x.sum[xb]);
      for (int h = 0; h < 2; ++h) {
        __m256i idot;
        if constexpr (kSub) {
          const int32_t sum_a = SumInt8x16(q + xb * kQuantBlock), sum_b = x.sum[xb] - sum_a;
          const __m256i a = _mm256_sub_epi32(dot[r][h][0], _mm256_set1_epi32(B::kOffset * sum_a));
          const __m256i c =
              _mm256_sub_epi32(dot[r][h][kSums - 1], _mm256_set1_epi32(B::kOffset * sum_b));
          idot = _mm256_add_epi32(_mm256_mullo_epi32(steps.sa[h], a),
                                  _mm256_mullo_epi32(steps.sb[h], c));
        } else {
          idot = _mm256_sub_epi32(dot[r][h][0], offset);
        }
        __m256 term = _mm256_mul_ps(_mm256_mul_ps(dw[h], dx), _mm256_cvtepi32_ps(idot));
        if constexpr (B::kHasMin) {
          term = _mm256_add_ps(
              term, _mm256_mul_ps(m[h], _mm256_set1_ps(x.d[xb] * static_cast<float>(x.sum[xb]))));
        }
        acc[r][h] = _mm256_add_ps(acc[r][h], term);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    alignas(32) float lanes[kPackedColumns];
    _mm256_store_ps(lanes, acc[r][0]);
    _mm256_store_ps(lanes + 8, acc[r][1]);
    std::memcpy(y + r * n_out, lanes, sizeof(float) * static_cast<size_t>(count));
  }
}

struct Avx2Packed {
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

void MatMulInt8PackedRangeAvx2(DType type, const uint8_t* packed, int64_t n_out,
                               const QuantizedActivations& x, float* y, int64_t o_begin,
                               int64_t o_end) {
  packed_drive::MatMulRange<Avx2Packed>(type, packed, n_out, x, y, o_begin, o_end);
}

}  // namespace staticlm::cpu::detail

#endif  // defined(__x86_64__)
