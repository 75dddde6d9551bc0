// AVX-512 matmul kernels. Only the functions marked STATICLM_AVX512 use AVX-512; the file is
// compiled for baseline x86-64 and runs only after SelectMatMul has checked the CPU.
//
// Vectors are 16 floats. A quantized block of 32 is two vectors: lane j of the first holds
// element j, lane j of the second element j + 16 (the low and high nibbles of qs[j] in Q4).
#include "backends/cpu/matmul_impls.h"

#if defined(__x86_64__)

// GCC 12's AVX-512 intrinsics start from self-initialised "undefined" vectors that its own
// -Wuninitialized flags once inlined (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#include "backends/cpu/matmul_tiles.h"

#define STATICLM_AVX512 \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"), always_inline)) inline
#define STATICLM_AVX512_KERNEL __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))

namespace staticlm::cpu::detail {
namespace {

using tiles::TileArgs;

STATICLM_AVX512 float LoadHalf(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof(h));
  return _cvtsh_ss(h);
}

// Lane q holds float(q), so that table = iota · d + offset decodes nibble q exactly as the
// reference does (float(q) · d, then + offset: the same two roundings).
STATICLM_AVX512 __m512 Iota() {
  return _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}

// A 4-bit block: 16 bytes of nibbles looked up in the block's 16-entry table. vpermps reads
// only the low 4 bits of each index, so the low nibbles need no mask.
STATICLM_AVX512 void DecodeNibbles(const uint8_t* qs, __m512 table, __m512 out[2]) {
  __m512i bytes = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
  out[0] = _mm512_permutexvar_ps(bytes, table);
  out[1] = _mm512_permutexvar_ps(_mm512_srli_epi32(bytes, 4), table);
}

struct Q4_0Block {
  static constexpr int kElements = 32;
  static constexpr int kVectors = 2;
  static constexpr size_t kBytes = 18;
  static constexpr bool kHasTail = false;
  STATICLM_AVX512 static void Decode(const uint8_t* block, __m512 out[2]) {
    float d = LoadHalf(block);
    __m512 table =
        _mm512_add_ps(_mm512_mul_ps(Iota(), _mm512_set1_ps(d)), _mm512_set1_ps(-8.0f * d));
    DecodeNibbles(block + 2, table, out);
  }
};

struct Q4_1Block {
  static constexpr int kElements = 32;
  static constexpr int kVectors = 2;
  static constexpr size_t kBytes = 20;
  static constexpr bool kHasTail = false;
  STATICLM_AVX512 static void Decode(const uint8_t* block, __m512 out[2]) {
    __m512 table = _mm512_add_ps(_mm512_mul_ps(Iota(), _mm512_set1_ps(LoadHalf(block))),
                                 _mm512_set1_ps(LoadHalf(block + 2)));
    DecodeNibbles(block + 4, table, out);
  }
};

struct Q8_0Block {
  static constexpr int kElements = 32;
  static constexpr int kVectors = 2;
  static constexpr size_t kBytes = 34;
  static constexpr bool kHasTail = false;
  STATICLM_AVX512 static void Decode(const uint8_t* block, __m512 out[2]) {
    __m512 d = _mm512_set1_ps(LoadHalf(block));
    for (int v = 0; v < 2; ++v) {
      __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2 + 16 * v));
      out[v] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), d);
    }
  }
};

// Plain types: a step is 16 elements; the last partial step is read with a lane mask.
struct F32Block {
  static constexpr int kElements = 16;
  static constexpr int kVectors = 1;
  static constexpr size_t kBytes = 64;
  static constexpr bool kHasTail = true;
  STATICLM_AVX512 static void Decode(const uint8_t* p, __m512 out[1]) {
    out[0] = _mm512_loadu_ps(p);
  }
  STATICLM_AVX512 static __m512 DecodeTail(const uint8_t* p, __mmask16 mask) {
    return _mm512_maskz_loadu_ps(mask, p);
  }
};

struct F16Block {
  static constexpr int kElements = 16;
  static constexpr int kVectors = 1;
  static constexpr size_t kBytes = 32;
  static constexpr bool kHasTail = true;
  STATICLM_AVX512 static void Decode(const uint8_t* p, __m512 out[1]) {
    out[0] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  STATICLM_AVX512 static __m512 DecodeTail(const uint8_t* p, __mmask16 mask) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, p));
  }
};

struct BF16Block {
  static constexpr int kElements = 16;
  static constexpr int kVectors = 1;
  static constexpr size_t kBytes = 32;
  static constexpr bool kHasTail = true;
  STATICLM_AVX512 static __m512 Widen(__m256i bits) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
  }
  STATICLM_AVX512 static void Decode(const uint8_t* p, __m512 out[1]) {
    out[0] = Widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  STATICLM_AVX512 static __m512 DecodeTail(const uint8_t* p, __mmask16 mask) {
    return Widen(_mm256_maskz_loadu_epi16(mask, p));
  }
};

// Fixed pairing (halves, then quarters, ...) so every output is reduced the same way.
STATICLM_AVX512 float ReduceAdd(__m512 v) {
  __m256 lo = _mm512_castps512_ps256(v);
  // A lane shuffle rather than an extract: GCC 12 warns inside _mm512_extractf64x4_pd.
  __m256 hi = _mm512_castps512_ps256(_mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(3, 2, 3, 2)));
  __m256 s8 = _mm256_add_ps(lo, hi);
  __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
  return _mm_cvtss_f32(s1);
}

template <class B>
struct Tiles {
  template <int O, int R>
  STATICLM_AVX512_KERNEL static void Run(const TileArgs& a) {
    __m512 acc[O][R];
#pragma GCC unroll 4
    for (int o = 0; o < O; ++o) {
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) acc[o][r] = _mm512_setzero_ps();
    }
    const int64_t steps = a.n_in / B::kElements;
    for (int64_t s = 0; s < steps; ++s) {
      __m512 w[O][B::kVectors];
#pragma GCC unroll 4
      for (int o = 0; o < O; ++o) B::Decode(a.w + o * a.row_bytes + s * B::kBytes, w[o]);
#pragma GCC unroll 2
      for (int v = 0; v < B::kVectors; ++v) {
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
          __m512 xv = _mm512_loadu_ps(a.x + r * a.n_in + s * B::kElements + 16 * v);
#pragma GCC unroll 4
          for (int o = 0; o < O; ++o) acc[o][r] = _mm512_fmadd_ps(w[o][v], xv, acc[o][r]);
        }
      }
    }
    if constexpr (B::kHasTail) {
      const int64_t done = steps * B::kElements;
      const int rest = static_cast<int>(a.n_in - done);
      if (rest > 0) {
        const __mmask16 mask = static_cast<__mmask16>((1u << rest) - 1u);
        __m512 w[O];
        for (int o = 0; o < O; ++o) {
          w[o] = B::DecodeTail(a.w + o * a.row_bytes + steps * B::kBytes, mask);
        }
        for (int r = 0; r < R; ++r) {
          __m512 xv = _mm512_maskz_loadu_ps(mask, a.x + r * a.n_in + done);
          for (int o = 0; o < O; ++o) acc[o][r] = _mm512_fmadd_ps(w[o], xv, acc[o][r]);
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      for (int o = 0; o < O; ++o) a.y[r * a.n_out + o] = ReduceAdd(acc[o][r]);
    }
  }
};

template <class B>
void Drive(const TileArgs& whole, int64_t rows, int64_t o_begin, int64_t o_end) {
  tiles::DriveTiles<Tiles<B>>(whole, rows, o_begin, o_end, tiles::kMaxTileOutputs,
                              tiles::kMaxTileRows);
}

}  // namespace

void MatMulRangeAvx512(DType type, const uint8_t* w, int64_t n_out, int64_t n_in, const float* x,
                       int64_t rows, float* y, int64_t o_begin, int64_t o_end) {
  TileArgs whole{w, DTypeBytes(type, static_cast<uint64_t>(n_in)), x, n_in, y, n_out};
  switch (type) {
    case DType::kQ4_0:
      return Drive<Q4_0Block>(whole, rows, o_begin, o_end);
    case DType::kQ4_1:
      return Drive<Q4_1Block>(whole, rows, o_begin, o_end);
    case DType::kQ8_0:
      return Drive<Q8_0Block>(whole, rows, o_begin, o_end);
    case DType::kF32:
      return Drive<F32Block>(whole, rows, o_begin, o_end);
    case DType::kF16:
      return Drive<F16Block>(whole, rows, o_begin, o_end);
    case DType::kBF16:
      return Drive<BF16Block>(whole, rows, o_begin, o_end);
    default:
      return MatMulRangeReference(type, w, n_out, n_in, x, rows, y, o_begin, o_end);
  }
}

}  // namespace staticlm::cpu::detail

#endif  // defined(__x86_64__)
