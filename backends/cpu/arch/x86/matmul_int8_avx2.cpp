// AVX2 integer-activation kernels, for CPUs without AVX-512 VNNI (matmul_int8.h states the
// arithmetic, which these compute bit for bit). The file is compiled for baseline x86-64; only
// functions marked STATICLM_AVX2 use AVX2, and they run only after IntIsaSupported has checked
// the CPU.
//
// The layout of matmul_int8_avx512vnni.cpp at half the width: one output column per lane, 8
// columns at a time (column j + 4k in 128-bit lane k of register j). int16 activations meet
// the weights widened to 16 bits in vpmaddwd; int8 activations use vpmaddubsw (u8 × s8 pairs
// to s16, which saturates above 32767), so Q8_0's signed weights go in as |w| against the
// activation with w's sign (at most 2 · 128 · 127 = 32512 per pair) and Q4's nibbles and Q5's
// 5-bit values as they are (at most 2 · 31 · 127); vpmaddwd by ones then widens the pairs to
// int32.
#include "backends/cpu/matmul_int8.h"
#include "backends/cpu/matmul_int8_drive.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include "backends/cpu/arch/x86/int8_sums.h"

#include <algorithm>
#include <cfloat>
#include <cstring>

#define STATICLM_AVX2 __attribute__((target("avx2,fma,f16c"), always_inline)) inline
#define STATICLM_AVX2_KERNEL __attribute__((target("avx2,fma,f16c")))

namespace staticlm::cpu::detail {
namespace {

constexpr int kColumns = 8;         // one output column per lane
constexpr int kMaxRows = 4;         // activation rows sharing each decoded weight block
constexpr int kPrefetchGroups = 4;  // how many groups ahead the prefetch reads (as VNNI's 2)

STATICLM_AVX2 int32_t HorizontalAdd(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

STATICLM_AVX2 float HorizontalMax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

// One block of 32 into integers in [−kMax, kMax] (127: int8, 32767: int16).
template <int kMax>
STATICLM_AVX2 void QuantizeBlock(const float* x, void* q, float* d_out, int32_t* sum_out) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 v[4];
  __m256 amax_v = _mm256_setzero_ps();
  for (int i = 0; i < 4; ++i) {
    v[i] = _mm256_loadu_ps(x + 8 * i);
    amax_v = _mm256_max_ps(amax_v, _mm256_and_ps(v[i], abs_mask));
  }
  const float amax = HorizontalMax(amax_v);
  float d = amax / static_cast<float>(kMax);
  if (!(d >= FLT_MIN)) d = 0.0f;
  const __m256 id = _mm256_set1_ps(d == 0.0f ? 0.0f : 1.0f / d);
  const __m256i lo = _mm256_set1_epi32(-kMax), hi = _mm256_set1_epi32(kMax);
  __m256i n[4];
  __m256i total = _mm256_setzero_si256();
  for (int i = 0; i < 4; ++i) {
    // vcvtps2dq rounds by MXCSR: to nearest, ties to even, as the reference's nearbyint.
    n[i] = _mm256_cvtps_epi32(_mm256_mul_ps(v[i], id));
    n[i] = _mm256_max_epi32(_mm256_min_epi32(n[i], hi), lo);
    total = _mm256_add_epi32(total, n[i]);
  }
  // The packs work within 128-bit lanes; the permutes put the values back in order. The
  // values are already in range, so the packs' saturation never acts.
  const __m256i p01 = _mm256_packs_epi32(n[0], n[1]), p23 = _mm256_packs_epi32(n[2], n[3]);
  if constexpr (kMax == 127) {
    const __m256i bytes = _mm256_packs_epi16(p01, p23);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    _mm256_storeu_si256(static_cast<__m256i*>(q), _mm256_permutevar8x32_epi32(bytes, order));
  } else {
    int16_t* out = static_cast<int16_t*>(q);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_permute4x64_epi64(p01, 0xd8));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 16), _mm256_permute4x64_epi64(p23, 0xd8));
  }
  *d_out = d;
  *sum_out = HorizontalAdd(total);
}

STATICLM_AVX2 __m256i Load2x128(const uint8_t* p0, const uint8_t* p1) {
  return _mm256_inserti128_si256(
      _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p0))),
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(p1)), 1);
}

// 8 f16 in the low halves of the lanes of `words`, as f32.
STATICLM_AVX2 __m256 LowHalves(__m256i words) {
  const __m256i low = _mm256_and_si256(words, _mm256_set1_epi32(0xffff));
  return _mm256_cvtph_ps(
      _mm_packus_epi32(_mm256_castsi256_si128(low), _mm256_extracti128_si256(low, 1)));
}

// 8 f32 from the lanes of `words` shifted right by `shift` bits, lanes masked to their low
// byte: byte shift / 8 of each lane.
STATICLM_AVX2 __m256 ByteOfLanes(__m256i packed, __m128i shift) {
  return _mm256_cvtepi32_ps(
      _mm256_and_si256(_mm256_srl_epi32(packed, shift), _mm256_set1_epi32(0xff)));
}

// The 32-bit word at p + offsets[c] in lane c (the 8 columns' words at one block offset).
STATICLM_AVX2 __m256i GatherWords(const uint8_t* p, __m256i offsets) {
  return _mm256_i32gather_epi32(reinterpret_cast<const int*>(p), offsets, 1);
}

// The scales of whole 32-value blocks that start with their f16 d (and, kMin, f16 m): block b
// of the 8 columns, one gather of the word at each block's start.
template <size_t kBlockBytes, bool kMin>
struct BlockScales {
  struct State {};
  template <class G>
  STATICLM_AVX2 static void Scales(const G& g, int64_t b, State&, __m256* dw, __m256* m) {
    const __m256i words = GatherWords(g.cols[0] + b * kBlockBytes, g.offsets);
    *dw = LowHalves(words);
    *m = kMin ? LowHalves(_mm256_srli_epi32(words, 16)) : _mm256_setzero_ps();
  }
};

// A column type of whole 32-value blocks: its bytes per block, the bias that makes its weights
// unsigned (u = wq + kOffset) and whether it has a min.
template <size_t kBlockBytes, int32_t kBias, bool kMin>
struct WholeBlocks : BlockScales<kBlockBytes, kMin> {
  static constexpr size_t kBytes = kBlockBytes;
  static constexpr int32_t kOffset = kBias;
  static constexpr bool kHasMin = kMin;
  static constexpr bool kSigned = false;
};

// 8 columns' block: lo[j] / hi[j] hold elements 0-15 / 16-31 of columns j (lane 0) and j + 4
// (lane 1), as unsigned nibbles (Q4: u = wq + kOffset) or signed bytes (Q8_0, kSigned).
template <size_t kBlockBytes, size_t kQsOffset, int32_t kBias, bool kMin>
struct Q4Columns : WholeBlocks<kBlockBytes, kBias, kMin> {
  using WholeBlocks<kBlockBytes, kBias, kMin>::kBytes;
  template <class G>
  STATICLM_AVX2 static void Load(const G& g, int64_t b, __m256i lo[4], __m256i hi[4]) {
    const __m256i nibble = _mm256_set1_epi8(0x0f);
    const uint8_t* const* cols = g.cols;
    const size_t at = static_cast<size_t>(b) * kBytes + kQsOffset;
    for (int j = 0; j < 4; ++j) {
      const __m256i v = Load2x128(cols[j] + at, cols[j + 4] + at);
      lo[j] = _mm256_and_si256(v, nibble);
      hi[j] = _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble);
    }
  }
};
using Q4_0Columns = Q4Columns<18, 2, 8, false>;  // u = nibble = wq + 8
using Q4_1Columns = Q4Columns<20, 4, 0, true>;   // u = nibble = wq

// 0x10 in byte i of each 128-bit lane whose bit i (of the 16 that `spread` picks from the
// lane's word) is set, else 0.
STATICLM_AVX2 __m256i FifthBits(__m256i words, __m256i spread, __m256i bit, __m256i fifth) {
  const __m256i tested = _mm256_and_si256(_mm256_shuffle_epi8(words, spread), bit);
  return _mm256_and_si256(_mm256_cmpeq_epi8(tested, bit), fifth);
}

// Q5: the nibbles plus bit 4 from the block's 32-bit qh (bit i for element i), as in the VNNI
// file: the columns' qh words gathered (lane c: column c), column j + 4k's word spread over
// 128-bit lane k of register j so that byte i tests bit i, compared against 1, 2, 4, ... 128.
template <size_t kBlockBytes, size_t kQhOffset, int32_t kBias, bool kMin>
struct Q5Columns : WholeBlocks<kBlockBytes, kBias, kMin> {
  using WholeBlocks<kBlockBytes, kBias, kMin>::kBytes;
  template <class G>
  STATICLM_AVX2 static void Load(const G& g, int64_t b, __m256i lo[4], __m256i hi[4]) {
    const size_t at = static_cast<size_t>(b) * kBytes;
    const __m256i nibble = _mm256_set1_epi8(0x0f), fifth = _mm256_set1_epi8(0x10);
    const __m256i qh = _mm256_i32gather_epi32(
        reinterpret_cast<const int*>(g.cols[0] + at + kQhOffset), g.offsets, 1);
    const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
    // Bytes 0-7 of each lane from byte 0 (lo) or 2 (hi) of the word, bytes 8-15 from 1 or 3.
    const __m256i spread_lo =
        _mm256_broadcastsi128_si256(_mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1));
    const __m256i spread_hi =
        _mm256_broadcastsi128_si256(_mm_setr_epi8(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
    const __m256i lane_columns = _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4);
    const size_t qs = at + kQhOffset + 4;
    for (int j = 0; j < 4; ++j) {
      const __m256i v = Load2x128(g.cols[j] + qs, g.cols[j + 4] + qs);
      const __m256i words =
          _mm256_permutevar8x32_epi32(qh, _mm256_add_epi32(lane_columns, _mm256_set1_epi32(j)));
      lo[j] = _mm256_or_si256(_mm256_and_si256(v, nibble), FifthBits(words, spread_lo, bit, fifth));
      hi[j] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), nibble),
                              FifthBits(words, spread_hi, bit, fifth));
    }
  }
};
using Q5_0Columns = Q5Columns<22, 2, 16, false>;  // u = 5-bit value = wq + 16
using Q5_1Columns = Q5Columns<24, 4, 0, true>;    // u = 5-bit value = wq

// Q4_K as in the VNNI file: block b is sub-block b % 8 of super-block b / 8, a Q4_1-like block
// with dw = d · sc and m = −(dmin · min); a super-block's scales are unpacked for the 8
// columns at its first sub-block and kept in State.
struct Q4_KColumns {
  static constexpr size_t kBytes = 144;  // per super-block of 256
  static constexpr int64_t kBlockValues = 256;
  static constexpr int32_t kOffset = 0;
  static constexpr bool kHasMin = true;
  static constexpr bool kSigned = false;
  struct State {
    __m256 d, neg_dmin;
    __m256i sc[2], mins[2];  // byte k of lane c: sub-block 4i + k's 6-bit value, column c
  };
  template <class G>
  STATICLM_AVX2 static void Scales(const G& g, int64_t b, State& s, __m256* dw, __m256* m) {
    const int unit = static_cast<int>(b % 8);
    if (unit == 0) {
      const uint8_t* first = g.cols[0] + static_cast<size_t>(b / 8) * kBytes;
      const __m256i dd = GatherWords(first, g.offsets), w0 = GatherWords(first + 4, g.offsets),
                    w1 = GatherWords(first + 8, g.offsets), w2 = GatherWords(first + 12, g.offsets);
      const __m256i low6 = _mm256_set1_epi32(0x3f3f3f3f), low4 = _mm256_set1_epi32(0x0f0f0f0f);
      const __m256i bits45 = _mm256_set1_epi32(0x30303030);
      s.d = LowHalves(dd);
      s.neg_dmin = _mm256_castsi256_ps(_mm256_xor_si256(
          _mm256_castps_si256(LowHalves(_mm256_srli_epi32(dd, 16))), _mm256_set1_epi32(INT32_MIN)));
      s.sc[0] = _mm256_and_si256(w0, low6);
      s.mins[0] = _mm256_and_si256(w1, low6);
      s.sc[1] = _mm256_or_si256(_mm256_and_si256(w2, low4),
                                _mm256_and_si256(_mm256_srli_epi32(w0, 2), bits45));
      s.mins[1] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(w2, 4), low4),
                                  _mm256_and_si256(_mm256_srli_epi32(w1, 2), bits45));
    }
    const __m128i shift = _mm_cvtsi32_si128(8 * (unit % 4));
    *dw = _mm256_mul_ps(s.d, ByteOfLanes(s.sc[unit / 4], shift));
    *m = _mm256_mul_ps(s.neg_dmin, ByteOfLanes(s.mins[unit / 4], shift));
  }
  // Sub-blocks 2i and 2i + 1 share 32 bytes of qs: the low nibbles, then the high.
  template <class G>
  STATICLM_AVX2 static void Load(const G& g, int64_t b, __m256i lo[4], __m256i hi[4]) {
    const int unit = static_cast<int>(b % 8);
    const size_t at = static_cast<size_t>(b / 8) * kBytes + 16 + 32 * (unit / 2);
    const __m128i shift = _mm_cvtsi32_si128(4 * (unit % 2));
    const __m256i nibble = _mm256_set1_epi8(0x0f);
    for (int j = 0; j < 4; ++j) {
      const __m256i v0 = Load2x128(g.cols[j] + at, g.cols[j + 4] + at);
      const __m256i v1 = Load2x128(g.cols[j] + at + 16, g.cols[j + 4] + at + 16);
      lo[j] = _mm256_and_si256(_mm256_srl_epi16(v0, shift), nibble);
      hi[j] = _mm256_and_si256(_mm256_srl_epi16(v1, shift), nibble);
    }
  }
};

// Q6_K as in the VNNI file: block b is elements 32u ... 32u + 31 (u = b % 8) of super-block
// b / 8, with dw = d and one integer scale per 16 elements; weights load as u = q6 = wq + 32
// (at most 63, so vpmaddubsw's pairs stay below 2 · 63 · 127 = 16002). d and the 16 scales of
// the 8 columns are gathered at the super-block's first block and kept in State.
struct Q6_KColumns {
  static constexpr size_t kBytes = 210;  // per super-block of 256
  static constexpr int64_t kBlockValues = 256;
  static constexpr int32_t kOffset = 32;
  static constexpr bool kHasMin = false;
  static constexpr bool kSigned = false;
  static constexpr bool kSubBlockScales = true;
  struct State {
    __m256 d;
    __m256i sc[4];  // byte k of lane c: scale 4i + k of column c (int8)
  };
  template <class G>
  STATICLM_AVX2 static void Scales(const G& g, int64_t b, State& s, __m256* dw, __m256* m) {
    if (b % 8 == 0) {
      const uint8_t* first = g.cols[0] + static_cast<size_t>(b / 8) * kBytes;
      // d is the last 2 bytes of the block: read the word that ends with it.
      s.d = LowHalves(_mm256_srli_epi32(GatherWords(first + 206, g.offsets), 16));
      for (int i = 0; i < 4; ++i) s.sc[i] = GatherWords(first + 192 + 4 * i, g.offsets);
    }
    *dw = s.d;
    *m = _mm256_setzero_ps();
  }
  // The scales of elements 0-15 (*a) and 16-31 (*bb) of block b, sign-extended, lane c: column c.
  STATICLM_AVX2 static void SubBlockScales(const State& s, int64_t b, __m256i* a, __m256i* bb) {
    const int_drive::Q6KBlockPlace at = int_drive::Q6KPlaceOf(b);
    const __m256i word = s.sc[at.scale_word];
    *a = _mm256_srai_epi32(_mm256_sll_epi32(word, _mm_cvtsi32_si128(at.scale_a_up)), 24);
    *bb = _mm256_srai_epi32(_mm256_sll_epi32(word, _mm_cvtsi32_si128(at.scale_a_up - 8)), 24);
  }
  // Elements 0-15 and 16-31 of block b as u = q6 (int_drive::Q6KPlaceOf says where).
  template <class G>
  STATICLM_AVX2 static void Load(const G& g, int64_t b, __m256i lo[4], __m256i hi[4]) {
    const int_drive::Q6KBlockPlace place = int_drive::Q6KPlaceOf(b);
    const size_t ql = place.ql, qh = place.qh;
    const __m128i nibble_shift = _mm_cvtsi32_si128(place.nibble_shift);
    const __m128i high_shift = _mm_cvtsi32_si128(place.high_shift);
    const __m256i nibble = _mm256_set1_epi8(0x0f), two_bits = _mm256_set1_epi8(0x03);
    for (int j = 0; j < 4; ++j) {
      const size_t at[4] = {ql, ql + 16, qh, qh + 16};
      __m256i v[4];  // ql elements 0-15, 16-31; qh elements 0-15, 16-31
      for (int i = 0; i < 4; ++i) v[i] = Load2x128(g.cols[j] + at[i], g.cols[j + 4] + at[i]);
      for (int i = 0; i < 2; ++i) {
        const __m256i low = _mm256_and_si256(_mm256_srl_epi16(v[i], nibble_shift), nibble);
        const __m256i high = _mm256_and_si256(_mm256_srl_epi16(v[i + 2], high_shift), two_bits);
        (i == 0 ? lo[j] : hi[j]) = _mm256_or_si256(low, _mm256_slli_epi16(high, 4));
      }
    }
  }
};

struct Q8_0Columns : BlockScales<34, false> {
  static constexpr size_t kBytes = 34;
  static constexpr int32_t kOffset = 0;
  static constexpr bool kHasMin = false;
  static constexpr bool kSigned = true;
  template <class G>
  STATICLM_AVX2 static void Load(const G& g, int64_t b, __m256i lo[4], __m256i hi[4]) {
    const uint8_t* const* cols = g.cols;
    const size_t at = static_cast<size_t>(b) * kBytes + 2;
    for (int j = 0; j < 4; ++j) {
      lo[j] = Load2x128(cols[j] + at, cols[j + 4] + at);
      hi[j] = Load2x128(cols[j] + at + 16, cols[j + 4] + at + 16);
    }
  }
};

// As the VNNI file's Reduce4, within 128-bit lanes: column j + 4k's total lands in lane 4k + j.
STATICLM_AVX2 __m256i Reduce4(const __m256i p[4]) {
  __m256i s01 =
      _mm256_add_epi32(_mm256_unpacklo_epi32(p[0], p[1]), _mm256_unpackhi_epi32(p[0], p[1]));
  __m256i s23 =
      _mm256_add_epi32(_mm256_unpacklo_epi32(p[2], p[3]), _mm256_unpackhi_epi32(p[2], p[3]));
  return _mm256_add_epi32(_mm256_unpacklo_epi64(s01, s23), _mm256_unpackhi_epi64(s01, s23));
}

// Σ over 16 byte pairs of w · x as int32 partial sums (4 per 128-bit lane).
template <bool kSigned>
STATICLM_AVX2 __m256i DotBytes(__m256i w, __m256i x) {
  const __m256i ones = _mm256_set1_epi16(1);
  if constexpr (kSigned) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(x, w)),
                             ones);
  } else {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), ones);
  }
}

template <class B>
STATICLM_AVX2 __m256i DotInt8(const __m256i lo[4], const __m256i hi[4], const int8_t* q) {
  const __m256i xlo =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)));
  const __m256i xhi =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16)));
  __m256i p[4];
  for (int j = 0; j < 4; ++j) {
    p[j] = _mm256_add_epi32(DotBytes<B::kSigned>(lo[j], xlo), DotBytes<B::kSigned>(hi[j], xhi));
  }
  return Reduce4(p);
}

// Q6_K's idot (matmul_int8.h) in lane c, as the VNNI file's DotInt8SubBlocks: each half's dot
// of u = wq + kOffset with q, less kOffset times the half's Σ q, times the half's scale.
template <int32_t kOffset>
STATICLM_AVX2 __m256i DotInt8SubBlocks(const __m256i lo[4], const __m256i hi[4], const int8_t* q,
                                       int32_t sum, __m256i sa, __m256i sb) {
  const __m128i qlo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
  const __m256i xlo = _mm256_broadcastsi128_si256(qlo);
  const __m256i xhi =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16)));
  __m256i plo[4], phi[4];
  for (int j = 0; j < 4; ++j) {
    plo[j] = DotBytes<false>(lo[j], xlo);
    phi[j] = DotBytes<false>(hi[j], xhi);
  }
  const int32_t sum_lo = SumInt8x16(q);
  const __m256i dlo = _mm256_sub_epi32(Reduce4(plo), _mm256_set1_epi32(kOffset * sum_lo));
  const __m256i dhi = _mm256_sub_epi32(Reduce4(phi), _mm256_set1_epi32(kOffset * (sum - sum_lo)));
  return _mm256_add_epi32(_mm256_mullo_epi32(sa, dlo), _mm256_mullo_epi32(sb, dhi));
}

// w16[j][s]: elements 8s..8s+7 of each column widened to 16 bits.
template <class B>
STATICLM_AVX2 void Widen(const __m256i lo[4], const __m256i hi[4], __m256i w16[4][4]) {
  for (int j = 0; j < 4; ++j) {
    if constexpr (B::kSigned) {  // sign-extend: the byte in both halves, shifted down
      w16[j][0] = _mm256_srai_epi16(_mm256_unpacklo_epi8(lo[j], lo[j]), 8);
      w16[j][1] = _mm256_srai_epi16(_mm256_unpackhi_epi8(lo[j], lo[j]), 8);
      w16[j][2] = _mm256_srai_epi16(_mm256_unpacklo_epi8(hi[j], hi[j]), 8);
      w16[j][3] = _mm256_srai_epi16(_mm256_unpackhi_epi8(hi[j], hi[j]), 8);
    } else {
      const __m256i zero = _mm256_setzero_si256();
      w16[j][0] = _mm256_unpacklo_epi8(lo[j], zero);
      w16[j][1] = _mm256_unpackhi_epi8(lo[j], zero);
      w16[j][2] = _mm256_unpacklo_epi8(hi[j], zero);
      w16[j][3] = _mm256_unpackhi_epi8(hi[j], zero);
    }
  }
}

STATICLM_AVX2 __m256i DotInt16(const __m256i w16[4][4], const int16_t* q) {
  __m256i xs[4];
  for (int s = 0; s < 4; ++s) {
    xs[s] =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 8 * s)));
  }
  __m256i p[4];
  for (int j = 0; j < 4; ++j) {
    const __m256i a =
        _mm256_add_epi32(_mm256_madd_epi16(w16[j][0], xs[0]), _mm256_madd_epi16(w16[j][1], xs[1]));
    const __m256i b =
        _mm256_add_epi32(_mm256_madd_epi16(w16[j][2], xs[2]), _mm256_madd_epi16(w16[j][3], xs[3]));
    p[j] = _mm256_add_epi32(a, b);
  }
  return Reduce4(p);
}

struct Group : int_drive::Columns<kColumns> {
  __m256i offsets;  // offset_values as a vector
};

template <class B, int kBits, int R>
STATICLM_AVX2_KERNEL void RunTile(const Group& g, const QuantizedActivations& x, int64_t r0,
                                  float* y, int64_t n_out) {
  const int64_t blocks = x.n_in / kQuantBlock;
  __m256 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  const int64_t prefetch_per_block = (g.prefetch_lines + blocks - 1) / blocks;
  typename B::State state{};  // filled by Scales at block 0
  for (int64_t b = 0; b < blocks; ++b) {
    for (int64_t k = 0; k < prefetch_per_block; ++k) {
      const int64_t line = b * prefetch_per_block + k;
      if (line < g.prefetch_lines) {
        _mm_prefetch(reinterpret_cast<const char*>(g.prefetch + line * 64), _MM_HINT_T0);
      }
    }
    __m256 dw, m;
    B::Scales(g, b, state, &dw, &m);
    constexpr bool kSubBlocks = int_drive::HasSubBlockScales<B>();
    __m256i sa = _mm256_setzero_si256(), sb = sa;  // kSubBlocks: scales of elements 0-15, 16-31
    if constexpr (kSubBlocks) B::SubBlockScales(state, b, &sa, &sb);
    __m256i lo[4], hi[4];
    B::Load(g, b, lo, hi);
    __m256i w16[4][4];
    if constexpr (kBits == 16) Widen<B>(lo, hi, w16);
    for (int r = 0; r < R; ++r) {
      const int64_t xb = (r0 + r) * blocks + b;
      const float dx = x.d[xb];
      const int32_t sum = x.sum[xb];
      __m256i idot;
      if constexpr (kBits == 16) {
        idot = DotInt16(w16, static_cast<const int16_t*>(x.q) + xb * kQuantBlock);
      } else if constexpr (kSubBlocks) {
        const int8_t* q = static_cast<const int8_t*>(x.q) + xb * kQuantBlock;
        idot = DotInt8SubBlocks<B::kOffset>(lo, hi, q, sum, sa, sb);
      } else {
        idot = DotInt8<B>(lo, hi, static_cast<const int8_t*>(x.q) + xb * kQuantBlock);
      }
      if (B::kOffset != 0 && !kSubBlocks) {
        idot = _mm256_sub_epi32(idot, _mm256_set1_epi32(B::kOffset * sum));
      }
      __m256 term = _mm256_mul_ps(_mm256_mul_ps(dw, _mm256_set1_ps(dx)), _mm256_cvtepi32_ps(idot));
      if (B::kHasMin) {
        term = _mm256_add_ps(term, _mm256_mul_ps(m, _mm256_set1_ps(dx * static_cast<float>(sum))));
      }
      acc[r] = _mm256_add_ps(acc[r], term);
    }
  }
  for (int r = 0; r < R; ++r) {
    if (g.count == kColumns) {
      _mm256_storeu_ps(y + r * n_out, acc[r]);
    } else {
      alignas(32) float lanes[kColumns];
      _mm256_store_ps(lanes, acc[r]);
      std::memcpy(y + r * n_out, lanes, sizeof(float) * static_cast<size_t>(g.count));
    }
  }
}

// What int_drive (matmul_int8_drive.h) needs of this ISA.
struct Avx2Isa {
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
  STATICLM_AVX2_KERNEL static Group MakeGroup(const int_drive::Columns<kColumns>& c) {
    Group g;
    static_cast<int_drive::Columns<kColumns>&>(g) = c;
    g.offsets = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c.offset_values));
    return g;
  }
  template <class B, int kBits, int R>
  static void RunTile(const Group& g, const QuantizedActivations& x, int64_t r0, float* y,
                      int64_t n_out) {
    detail::RunTile<B, kBits, R>(g, x, r0, y, n_out);
  }
};

}  // namespace

STATICLM_AVX2_KERNEL void QuantizeInt8Avx2(const float* x, int64_t rows, int64_t n_in, void* q,
                                           float* d, int32_t* sum) {
  const int64_t blocks = rows * (n_in / kQuantBlock);
  for (int64_t b = 0; b < blocks; ++b) {
    QuantizeBlock<127>(x + b * kQuantBlock, static_cast<int8_t*>(q) + b * kQuantBlock, d + b,
                       sum + b);
  }
}

STATICLM_AVX2_KERNEL void QuantizeInt16Avx2(const float* x, int64_t rows, int64_t n_in, void* q,
                                            float* d, int32_t* sum) {
  const int64_t blocks = rows * (n_in / kQuantBlock);
  for (int64_t b = 0; b < blocks; ++b) {
    QuantizeBlock<32767>(x + b * kQuantBlock, static_cast<int16_t*>(q) + b * kQuantBlock, d + b,
                         sum + b);
  }
}

void MatMulIntRangeAvx2(DType type, const uint8_t* w, int64_t n_out, const QuantizedActivations& x,
                        float* y, int64_t o_begin, int64_t o_end) {
  int_drive::MatMulIntRange<Avx2Isa>(type, w, n_out, x, y, o_begin, o_end);
}

}  // namespace staticlm::cpu::detail

#endif  // defined(__x86_64__)
