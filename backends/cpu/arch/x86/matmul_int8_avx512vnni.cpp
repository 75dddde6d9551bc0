// AVX-512 VNNI integer-activation kernels (matmul_int8.h states the arithmetic, which these
// compute bit for bit). The file is compiled for baseline x86-64; only functions marked
// STATICLM_VNNI use AVX-512, and they run only after IntIsaSupported has checked the CPU.
//
// Layout: one output column per lane, 16 columns at a time, so that each column's sum over
// blocks runs in block order in its own lane, exactly as the reference sums it. Per block, the
// columns' weights are loaded as unsigned bytes (column j + 4k in 128-bit lane k of register j);
// int8 activations meet them in vpdpbusd (u8 × s8), int16 activations in vpdpwssd after the
// bytes are widened to 16 bits. The partial sums of each column (4 int32 per 128-bit lane) are
// then folded into one lane by a fixed unpack-and-add tree. Weights are decoded once per row tile
// of up to 8 activation rows (measured 1.1–1.3× faster prefill than 4 rows).
//
// Decode speed: the 16 columns' rows are read in 16 interleaved strides, which the hardware
// prefetchers follow poorly; a sequential software prefetch of the group two ahead roughly
// doubled single-thread decode throughput (bench/matmul_int8_bench.cpp).
#include "backends/cpu/matmul_int8.h"
#include "backends/cpu/matmul_int8_drive.h"

#if defined(__x86_64__)

#include "backends/cpu/arch/x86/avx512_intrinsics.h"
#include "backends/cpu/arch/x86/int8_sums.h"

#include <algorithm>
#include <cfloat>

namespace staticlm::cpu::detail {
namespace {

constexpr int kColumns = 16;        // one output column per lane
constexpr int kMaxRows = 8;         // activation rows sharing each decoded weight block
constexpr int kPrefetchGroups = 2;  // how many groups ahead the prefetch reads

// One block of 32 into integers in [−kMax, kMax] (127: int8, 32767: int16).
template <int kMax>
STATICLM_VNNI void QuantizeBlock(const float* x, void* q, float* d_out, int32_t* sum_out) {
  const __m512 a = _mm512_loadu_ps(x);
  const __m512 b = _mm512_loadu_ps(x + 16);
  const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(a), _mm512_abs_ps(b)));
  float d = amax / static_cast<float>(kMax);
  if (!(d >= FLT_MIN)) d = 0.0f;
  const __m512 id = _mm512_set1_ps(d == 0.0f ? 0.0f : 1.0f / d);
  const __m512i lo = _mm512_set1_epi32(-kMax), hi = _mm512_set1_epi32(kMax);
  // vcvtps2dq rounds by MXCSR: to nearest, ties to even, as the reference's nearbyint.
  __m512i qa = _mm512_cvtps_epi32(_mm512_mul_ps(a, id));
  __m512i qb = _mm512_cvtps_epi32(_mm512_mul_ps(b, id));
  qa = _mm512_max_epi32(_mm512_min_epi32(qa, hi), lo);
  qb = _mm512_max_epi32(_mm512_min_epi32(qb, hi), lo);
  if constexpr (kMax == 127) {
    int8_t* out = static_cast<int8_t*>(q);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm512_cvtepi32_epi8(qa));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 16), _mm512_cvtepi32_epi8(qb));
  } else {
    int16_t* out = static_cast<int16_t*>(q);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm512_cvtepi32_epi16(qa));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 16), _mm512_cvtepi32_epi16(qb));
  }
  *d_out = d;
  *sum_out = _mm512_reduce_add_epi32(_mm512_add_epi32(qa, qb));
}

// Four 16-byte loads, p[k] into 128-bit lane k.
STATICLM_VNNI __m512i Load4x128(const uint8_t* p0, const uint8_t* p1, const uint8_t* p2,
                                const uint8_t* p3) {
  auto load = [](const uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); };
  __m512i v = _mm512_castsi128_si512(load(p0));
  v = _mm512_inserti32x4(v, load(p1), 1);
  v = _mm512_inserti32x4(v, load(p2), 2);
  return _mm512_inserti32x4(v, load(p3), 3);
}

// The f16 in the low half of each 32-bit lane, as f32.
STATICLM_VNNI __m512 LowHalves(__m512i words) {
  return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(words));
}

// The scales of whole 32-value blocks that start with their f16 d (and, kMin, f16 m): block b
// of the 16 columns, one gather of the word at each block's start.
template <size_t kBlockBytes, bool kMin>
struct BlockScales {
  struct State {};
  template <class G>
  STATICLM_VNNI static void Scales(const G& g, int64_t b, State&, __m512* dw, __m512* m) {
    const __m512i words = _mm512_i32gather_epi32(g.offsets, g.cols[0] + b * kBlockBytes, 1);
    *dw = LowHalves(words);
    *m = kMin ? LowHalves(_mm512_srli_epi32(words, 16)) : _mm512_setzero_ps();
  }
};

// A column type of whole 32-value blocks: its bytes per block, the bias that makes its weights
// unsigned (u = wq + kOffset) and whether it has a min.
template <size_t kBlockBytes, int32_t kBias, bool kMin>
struct WholeBlocks : BlockScales<kBlockBytes, kMin> {
  static constexpr size_t kBytes = kBlockBytes;
  static constexpr int32_t kOffset = kBias;
  static constexpr bool kHasMin = kMin;
};

// Weight blocks of 16 columns as unsigned bytes u = wq + kOffset. lo[j] and hi[j] hold, in
// 128-bit lane k, elements 0-15 and 16-31 of column j + 4k: the order Reduce4 expects.
template <size_t kBlockBytes, size_t kQsOffset, int32_t kBias, bool kMin>
struct Q4Columns : WholeBlocks<kBlockBytes, kBias, kMin> {
  using WholeBlocks<kBlockBytes, kBias, kMin>::kBytes;
  template <class G>
  STATICLM_VNNI static void Load(const G& g, int64_t b, __m512i lo[4], __m512i hi[4]) {
    const __m512i nibble = _mm512_set1_epi8(0x0f);
    const uint8_t* const* cols = g.cols;
    const size_t at = static_cast<size_t>(b) * kBytes + kQsOffset;
    for (int j = 0; j < 4; ++j) {
      __m512i v = Load4x128(cols[j] + at, cols[j + 4] + at, cols[j + 8] + at, cols[j + 12] + at);
      lo[j] = _mm512_and_si512(v, nibble);
      hi[j] = _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble);
    }
  }
};
using Q4_0Columns = Q4Columns<18, 2, 8, false>;  // u = nibble = wq + 8
using Q4_1Columns = Q4Columns<20, 4, 0, true>;   // u = nibble = wq

// Q5: the nibbles as in Q4, plus bit 4 from the block's 32-bit qh (bit i for element i). The
// columns' qh words are gathered into one register (lane c: column c); for register j each
// 128-bit lane k gets column j + 4k's word, whose bytes are spread so that byte i of the lane
// tests bit i of its 16 (vpshufb, then vptestmb against 1, 2, 4, ... 128 per 8 bytes).
template <size_t kBlockBytes, size_t kQhOffset, int32_t kBias, bool kMin>
struct Q5Columns : WholeBlocks<kBlockBytes, kBias, kMin> {
  using WholeBlocks<kBlockBytes, kBias, kMin>::kBytes;
  template <class G>
  STATICLM_VNNI static void Load(const G& g, int64_t b, __m512i lo[4], __m512i hi[4]) {
    const size_t at = static_cast<size_t>(b) * kBytes;
    const __m512i nibble = _mm512_set1_epi8(0x0f), fifth = _mm512_set1_epi8(0x10);
    const __m512i qh = _mm512_i32gather_epi32(g.offsets, g.cols[0] + at + kQhOffset, 1);
    const __m512i bit = _mm512_set1_epi64(static_cast<long long>(0x8040201008040201ull));
    // Bytes 0-7 of each lane from byte 0 (lo) or 2 (hi) of the word, bytes 8-15 from 1 or 3.
    const __m512i spread_lo =
        _mm512_broadcast_i32x4(_mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1));
    const __m512i spread_hi =
        _mm512_broadcast_i32x4(_mm_setr_epi8(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
    const __m512i lane_columns =
        _mm512_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12);
    const size_t qs = at + kQhOffset + 4;
    for (int j = 0; j < 4; ++j) {
      const uint8_t* const* cols = g.cols;
      const __m512i v =
          Load4x128(cols[j] + qs, cols[j + 4] + qs, cols[j + 8] + qs, cols[j + 12] + qs);
      const __m512i words =
          _mm512_permutexvar_epi32(_mm512_add_epi32(lane_columns, _mm512_set1_epi32(j)), qh);
      const __mmask64 high_lo = _mm512_test_epi8_mask(_mm512_shuffle_epi8(words, spread_lo), bit);
      const __mmask64 high_hi = _mm512_test_epi8_mask(_mm512_shuffle_epi8(words, spread_hi), bit);
      const __m512i low_nibbles = _mm512_and_si512(v, nibble);
      const __m512i high_nibbles = _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble);
      lo[j] = _mm512_mask_add_epi8(low_nibbles, high_lo, low_nibbles, fifth);
      hi[j] = _mm512_mask_add_epi8(high_nibbles, high_hi, high_nibbles, fifth);
    }
  }
};
using Q5_0Columns = Q5Columns<22, 2, 16, false>;  // u = 5-bit value = wq + 16
using Q5_1Columns = Q5Columns<24, 4, 0, true>;    // u = 5-bit value = wq

// Byte `shift` / 8 of each 32-bit lane, as f32.
STATICLM_VNNI __m512 ByteOfLanes(__m512i packed, __m128i shift) {
  return _mm512_cvtepi32_ps(
      _mm512_and_si512(_mm512_srl_epi32(packed, shift), _mm512_set1_epi32(0xff)));
}

// Q4_K: block b of the product is sub-block b % 8 of super-block b / 8 (144 bytes: f16 d and
// dmin, 12 bytes of 6-bit scales and mins, 128 bytes of nibbles), taken as a Q4_1-like block
// with dw = d · sc and m = −(dmin · min) (matmul_int8.h). The scales of a super-block are
// unpacked for all 16 columns at its first sub-block (kquant::UnpackScalesAndMins, a lane per
// column) and kept in State for the other seven.
struct Q4_KColumns {
  static constexpr size_t kBytes = 144;  // per super-block of 256
  static constexpr int64_t kBlockValues = 256;
  static constexpr int32_t kOffset = 0;
  static constexpr bool kHasMin = true;
  struct State {
    __m512 d, neg_dmin;
    __m512i sc[2], mins[2];  // byte k of lane c: sub-block 4i + k's 6-bit value, column c
  };
  template <class G>
  STATICLM_VNNI static void Scales(const G& g, int64_t b, State& s, __m512* dw, __m512* m) {
    const int unit = static_cast<int>(b % 8);
    if (unit == 0) {
      const uint8_t* first = g.cols[0] + static_cast<size_t>(b / 8) * kBytes;
      const __m512i dd = _mm512_i32gather_epi32(g.offsets, first, 1);
      const __m512i w0 = _mm512_i32gather_epi32(g.offsets, first + 4, 1);
      const __m512i w1 = _mm512_i32gather_epi32(g.offsets, first + 8, 1);
      const __m512i w2 = _mm512_i32gather_epi32(g.offsets, first + 12, 1);
      const __m512i low6 = _mm512_set1_epi32(0x3f3f3f3f), low4 = _mm512_set1_epi32(0x0f0f0f0f);
      const __m512i bits45 = _mm512_set1_epi32(0x30303030);
      s.d = LowHalves(dd);
      s.neg_dmin = _mm512_castsi512_ps(_mm512_xor_si512(
          _mm512_castps_si512(LowHalves(_mm512_srli_epi32(dd, 16))), _mm512_set1_epi32(INT32_MIN)));
      s.sc[0] = _mm512_and_si512(w0, low6);
      s.mins[0] = _mm512_and_si512(w1, low6);
      s.sc[1] = _mm512_or_si512(_mm512_and_si512(w2, low4),
                                _mm512_and_si512(_mm512_srli_epi32(w0, 2), bits45));
      s.mins[1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(w2, 4), low4),
                                  _mm512_and_si512(_mm512_srli_epi32(w1, 2), bits45));
    }
    const __m128i shift = _mm_cvtsi32_si128(8 * (unit % 4));
    *dw = _mm512_mul_ps(s.d, ByteOfLanes(s.sc[unit / 4], shift));
    *m = _mm512_mul_ps(s.neg_dmin, ByteOfLanes(s.mins[unit / 4], shift));
  }
  // Sub-blocks 2i and 2i + 1 share 32 bytes of qs: the low nibbles, then the high.
  template <class G>
  STATICLM_VNNI static void Load(const G& g, int64_t b, __m512i lo[4], __m512i hi[4]) {
    const int unit = static_cast<int>(b % 8);
    const size_t at = static_cast<size_t>(b / 8) * kBytes + 16 + 32 * (unit / 2);
    const __m128i shift = _mm_cvtsi32_si128(4 * (unit % 2));
    const __m512i nibble = _mm512_set1_epi8(0x0f);
    const uint8_t* const* cols = g.cols;
    for (int j = 0; j < 4; ++j) {
      const __m512i v0 =
          Load4x128(cols[j] + at, cols[j + 4] + at, cols[j + 8] + at, cols[j + 12] + at);
      const __m512i v1 = Load4x128(cols[j] + at + 16, cols[j + 4] + at + 16, cols[j + 8] + at + 16,
                                   cols[j + 12] + at + 16);
      lo[j] = _mm512_and_si512(_mm512_srl_epi16(v0, shift), nibble);
      hi[j] = _mm512_and_si512(_mm512_srl_epi16(v1, shift), nibble);
    }
  }
};

// Q6_K: block b of the product is elements 32u ... 32u + 31 (u = b % 8) of super-block b / 8
// (210 bytes: ql[128], qh[64], 16 int8 scales, f16 d), with dw = d and two integer scales, one
// per 16 elements (matmul_int8.h). Weights load as u = q6 = wq + 32 (6 bits): the low nibble from
// ql, bits 4-5 from qh. d and the 16 scales of all 16 columns are gathered at the super-block's
// first block and kept in State.
struct Q6_KColumns {
  static constexpr size_t kBytes = 210;  // per super-block of 256
  static constexpr int64_t kBlockValues = 256;
  static constexpr int32_t kOffset = 32;
  static constexpr bool kHasMin = false;
  static constexpr bool kSubBlockScales = true;
  struct State {
    __m512 d;
    __m512i sc[4];  // byte k of lane c: scale 4i + k of column c (int8)
  };
  template <class G>
  STATICLM_VNNI static void Scales(const G& g, int64_t b, State& s, __m512* dw, __m512* m) {
    if (b % 8 == 0) {
      const uint8_t* first = g.cols[0] + static_cast<size_t>(b / 8) * kBytes;
      // d is the last 2 bytes of the block: read the word that ends with it.
      s.d = LowHalves(_mm512_srli_epi32(_mm512_i32gather_epi32(g.offsets, first + 206, 1), 16));
      for (int i = 0; i < 4; ++i) {
        s.sc[i] = _mm512_i32gather_epi32(g.offsets, first + 192 + 4 * i, 1);
      }
    }
    *dw = s.d;
    *m = _mm512_setzero_ps();
  }
  // The scales of elements 0-15 (*a) and 16-31 (*bb) of block b, sign-extended, lane c: column c.
  STATICLM_VNNI static void SubBlockScales(const State& s, int64_t b, __m512i* a, __m512i* bb) {
    const int_drive::Q6KBlockPlace at = int_drive::Q6KPlaceOf(b);
    const __m512i word = s.sc[at.scale_word];
    *a = _mm512_srai_epi32(_mm512_sll_epi32(word, _mm_cvtsi32_si128(at.scale_a_up)), 24);
    *bb = _mm512_srai_epi32(_mm512_sll_epi32(word, _mm_cvtsi32_si128(at.scale_a_up - 8)), 24);
  }
  // Elements 0-15 and 16-31 of block b as u = q6 (int_drive::Q6KPlaceOf says where).
  template <class G>
  STATICLM_VNNI static void Load(const G& g, int64_t b, __m512i lo[4], __m512i hi[4]) {
    const int_drive::Q6KBlockPlace place = int_drive::Q6KPlaceOf(b);
    const size_t ql = place.ql, qh = place.qh;
    const __m128i nibble_shift = _mm_cvtsi32_si128(place.nibble_shift);
    const __m128i high_shift = _mm_cvtsi32_si128(place.high_shift);
    const __m512i nibble = _mm512_set1_epi8(0x0f), two_bits = _mm512_set1_epi8(0x03);
    const uint8_t* const* cols = g.cols;
    for (int j = 0; j < 4; ++j) {
      __m512i v[4];  // ql elements 0-15, 16-31; qh elements 0-15, 16-31
      const size_t at[4] = {ql, ql + 16, qh, qh + 16};
      for (int i = 0; i < 4; ++i) {
        v[i] = Load4x128(cols[j] + at[i], cols[j + 4] + at[i], cols[j + 8] + at[i],
                         cols[j + 12] + at[i]);
      }
      for (int i = 0; i < 2; ++i) {
        const __m512i low = _mm512_and_si512(_mm512_srl_epi16(v[i], nibble_shift), nibble);
        const __m512i high = _mm512_and_si512(_mm512_srl_epi16(v[i + 2], high_shift), two_bits);
        (i == 0 ? lo[j] : hi[j]) = _mm512_or_si512(low, _mm512_slli_epi16(high, 4));
      }
    }
  }
};

struct Q8_0Columns : BlockScales<34, false> {
  static constexpr size_t kBytes = 34;
  static constexpr int32_t kOffset = 128;  // u = wq xor 0x80 = wq + 128
  static constexpr bool kHasMin = false;
  template <class G>
  STATICLM_VNNI static void Load(const G& g, int64_t b, __m512i lo[4], __m512i hi[4]) {
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
    const uint8_t* const* cols = g.cols;
    const size_t at = static_cast<size_t>(b) * kBytes + 2;
    for (int j = 0; j < 4; ++j) {
      lo[j] = _mm512_xor_si512(
          Load4x128(cols[j] + at, cols[j + 4] + at, cols[j + 8] + at, cols[j + 12] + at), flip);
      hi[j] = _mm512_xor_si512(Load4x128(cols[j] + at + 16, cols[j + 4] + at + 16,
                                         cols[j + 8] + at + 16, cols[j + 12] + at + 16),
                               flip);
    }
  }
};

// p[j] holds 4 partial sums per 128-bit lane k for column j + 4k; returns column c's total in
// lane c. Integer sums are exact, so the tree's shape does not matter for the result.
STATICLM_VNNI __m512i Reduce4(const __m512i p[4]) {
  __m512i s01 =
      _mm512_add_epi32(_mm512_unpacklo_epi32(p[0], p[1]), _mm512_unpackhi_epi32(p[0], p[1]));
  __m512i s23 =
      _mm512_add_epi32(_mm512_unpacklo_epi32(p[2], p[3]), _mm512_unpackhi_epi32(p[2], p[3]));
  return _mm512_add_epi32(_mm512_unpacklo_epi64(s01, s23), _mm512_unpackhi_epi64(s01, s23));
}

struct Group : int_drive::Columns<kColumns> {
  __m512i offsets;  // offset_values as a vector
  __mmask16 lanes;  // the lanes that are real columns
};

// Column c's integer dot with int8 activations q (32 values) in lane c: vpdpbusd of the
// unsigned weight bytes with the signed activation bytes, 16 at a time.
STATICLM_VNNI __m512i DotInt8(const __m512i lo[4], const __m512i hi[4], const int8_t* q) {
  const __m512i xlo = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)));
  const __m512i xhi =
      _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16)));
  __m512i p[4];
  for (int j = 0; j < 4; ++j) {
    p[j] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo[j], xlo), hi[j], xhi);
  }
  return Reduce4(p);
}

// Q6_K's idot (matmul_int8.h) in lane c, from u = wq + kOffset: each half's dot of u with q,
// less kOffset times the half's Σ q (sum: the whole block's), times the half's scale (sa, sb).
template <int32_t kOffset>
STATICLM_VNNI __m512i DotInt8SubBlocks(const __m512i lo[4], const __m512i hi[4], const int8_t* q,
                                       int32_t sum, __m512i sa, __m512i sb) {
  const __m128i qlo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
  const __m512i xlo = _mm512_broadcast_i32x4(qlo);
  const __m512i xhi =
      _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16)));
  __m512i plo[4], phi[4];
  for (int j = 0; j < 4; ++j) {
    plo[j] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo[j], xlo);
    phi[j] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), hi[j], xhi);
  }
  const int32_t sum_lo = SumInt8x16(q);
  const __m512i dlo = _mm512_sub_epi32(Reduce4(plo), _mm512_set1_epi32(kOffset * sum_lo));
  const __m512i dhi = _mm512_sub_epi32(Reduce4(phi), _mm512_set1_epi32(kOffset * (sum - sum_lo)));
  return _mm512_add_epi32(_mm512_mullo_epi32(sa, dlo), _mm512_mullo_epi32(sb, dhi));
}

// The same with int16 activations: vpdpwssd of the weights widened to 16 bits (w16[j][s] holds
// elements 8s..8s+7 of each column, in Load's lane order) with 8 activations at a time.
STATICLM_VNNI __m512i DotInt16(const __m512i w16[4][4], const int16_t* q) {
  __m512i xs[4];
  for (int s = 0; s < 4; ++s) {
    xs[s] = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 8 * s)));
  }
  __m512i p[4];
  for (int j = 0; j < 4; ++j) {
    __m512i a = _mm512_dpwssd_epi32(_mm512_setzero_si512(), w16[j][0], xs[0]);
    __m512i b = _mm512_dpwssd_epi32(_mm512_setzero_si512(), w16[j][1], xs[1]);
    a = _mm512_dpwssd_epi32(a, w16[j][2], xs[2]);
    b = _mm512_dpwssd_epi32(b, w16[j][3], xs[3]);
    p[j] = _mm512_add_epi32(a, b);
  }
  return Reduce4(p);
}

// Rows [r0, r0 + R) × the group's columns; y points at output (r0, first column).
template <class B, int kBits, int R>
STATICLM_VNNI_KERNEL void RunTile(const Group& g, const QuantizedActivations& x, int64_t r0,
                                  float* y, int64_t n_out) {
  const int64_t blocks = x.n_in / kQuantBlock;
  __m512 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  const int64_t prefetch_per_block = (g.prefetch_lines + blocks - 1) / blocks;
  typename B::State state{};  // filled by Scales at block 0
  for (int64_t b = 0; b < blocks; ++b) {
    for (int64_t k = 0; k < prefetch_per_block; ++k) {
      const int64_t line = b * prefetch_per_block + k;
      if (line < g.prefetch_lines) {
        _mm_prefetch(reinterpret_cast<const char*>(g.prefetch + line * 64), _MM_HINT_T0);
      }
    }
    __m512 dw, m;
    B::Scales(g, b, state, &dw, &m);
    constexpr bool kSubBlocks = int_drive::HasSubBlockScales<B>();
    __m512i sa = _mm512_setzero_si512(), sb = sa;  // kSubBlocks: scales of elements 0-15, 16-31
    if constexpr (kSubBlocks) B::SubBlockScales(state, b, &sa, &sb);
    __m512i lo[4], hi[4];
    B::Load(g, b, lo, hi);
    __m512i w16[4][4];
    if constexpr (kBits == 16) {  // widen the unsigned bytes: elements 0-7, 8-15, 16-23, 24-31
      const __m512i zero = _mm512_setzero_si512();
      for (int j = 0; j < 4; ++j) {
        w16[j][0] = _mm512_unpacklo_epi8(lo[j], zero);
        w16[j][1] = _mm512_unpackhi_epi8(lo[j], zero);
        w16[j][2] = _mm512_unpacklo_epi8(hi[j], zero);
        w16[j][3] = _mm512_unpackhi_epi8(hi[j], zero);
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const int64_t xb = (r0 + r) * blocks + b;
      const float dx = x.d[xb];
      const int32_t sum = x.sum[xb];
      __m512i idot;
      if constexpr (kBits == 16) {
        idot = DotInt16(w16, static_cast<const int16_t*>(x.q) + xb * kQuantBlock);
      } else if constexpr (kSubBlocks) {
        const int8_t* q = static_cast<const int8_t*>(x.q) + xb * kQuantBlock;
        idot = DotInt8SubBlocks<B::kOffset>(lo, hi, q, sum, sa, sb);
      } else {
        idot = DotInt8(lo, hi, static_cast<const int8_t*>(x.q) + xb * kQuantBlock);
      }
      if (B::kOffset != 0 && !kSubBlocks) {
        idot = _mm512_sub_epi32(idot, _mm512_set1_epi32(B::kOffset * sum));
      }
      __m512 term = _mm512_mul_ps(_mm512_mul_ps(dw, _mm512_set1_ps(dx)), _mm512_cvtepi32_ps(idot));
      if (B::kHasMin) {
        term = _mm512_add_ps(term, _mm512_mul_ps(m, _mm512_set1_ps(dx * static_cast<float>(sum))));
      }
      acc[r] = _mm512_add_ps(acc[r], term);
    }
  }
  for (int r = 0; r < R; ++r) _mm512_mask_storeu_ps(y + r * n_out, g.lanes, acc[r]);
}

// What int_drive (matmul_int8_drive.h) needs of this ISA.
struct VnniIsa {
  static constexpr int kColumns = detail::kColumns;
  static constexpr int kMaxRows = detail::kMaxRows;
  static constexpr int kPrefetchGroups = detail::kPrefetchGroups;
  using Group = detail::Group;
  using Q4_0 = Q4_0Columns;
  using Q4_1 = Q4_1Columns;
  using Q5_0 = Q5_0Columns;
  using Q5_1 = Q5_1Columns;
  using Q8_0 = Q8_0Columns;
  using Q4_K = Q4_KColumns;
  using Q6_K = Q6_KColumns;
  STATICLM_VNNI_KERNEL static Group MakeGroup(const int_drive::Columns<kColumns>& c) {
    Group g;
    static_cast<int_drive::Columns<kColumns>&>(g) = c;
    g.offsets = _mm512_loadu_si512(c.offset_values);
    g.lanes = static_cast<__mmask16>((1u << c.count) - 1u);
    return g;
  }
  template <class B, int kBits, int R>
  static void RunTile(const Group& g, const QuantizedActivations& x, int64_t r0, float* y,
                      int64_t n_out) {
    detail::RunTile<B, kBits, R>(g, x, r0, y, n_out);
  }
};

}  // namespace

STATICLM_VNNI_KERNEL void QuantizeInt8Avx512(const float* x, int64_t rows, int64_t n_in, void* q,
                                             float* d, int32_t* sum) {
  const int64_t blocks = rows * (n_in / kQuantBlock);
  for (int64_t b = 0; b < blocks; ++b) {
    QuantizeBlock<127>(x + b * kQuantBlock, static_cast<int8_t*>(q) + b * kQuantBlock, d + b,
                       sum + b);
  }
}

STATICLM_VNNI_KERNEL void QuantizeInt16Avx512(const float* x, int64_t rows, int64_t n_in, void* q,
                                              float* d, int32_t* sum) {
  const int64_t blocks = rows * (n_in / kQuantBlock);
  for (int64_t b = 0; b < blocks; ++b) {
    QuantizeBlock<32767>(x + b * kQuantBlock, static_cast<int16_t*>(q) + b * kQuantBlock, d + b,
                         sum + b);
  }
}

void MatMulIntRangeAvx512Vnni(DType type, const uint8_t* w, int64_t n_out,
                              const QuantizedActivations& x, float* y, int64_t o_begin,
                              int64_t o_end) {
  int_drive::MatMulIntRange<VnniIsa>(type, w, n_out, x, y, o_begin, o_end);
}

}  // namespace staticlm::cpu::detail

#endif  // defined(__x86_64__)
