// AVX2 + FMA matmul kernels. Only the functions marked STATICLM_AVX2 use those instructions;
// the file is compiled for baseline x86-64 and runs only after SelectMatMul has checked the
// CPU.
//
// Vectors are 8 floats. A quantized block of 32 is four vectors: lane j of vector v holds
// element 8v + j (vectors 0-1 are the low nibbles of qs[0..15] in Q4, vectors 2-3 the high).
#include "backends/cpu/matmul_impls.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include <cstring>

#include "backends/cpu/matmul_tiles.h"

#define STATICLM_AVX2 __attribute__((target("avx2,fma,f16c"), always_inline)) inline
#define STATICLM_AVX2_KERNEL __attribute__((target("avx2,fma,f16c")))

namespace staticlm::cpu::detail {
namespace {

using tiles::TileArgs;

STATICLM_AVX2 float LoadHalf(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof(h));
  return _cvtsh_ss(h);
}

// Nibbles of a Q4 block, widened on demand to 8 floats q · d + offset: the reference's two
// roundings (float(q) · d, then + offset), so the weights are bit-identical to its.
struct Nibbles {
  __m128i low;   // qs[j] & 15: elements 0-15
  __m128i high;  // qs[j] >> 4: elements 16-31
  __m256 d;
  __m256 offset;
};

STATICLM_AVX2 Nibbles LoadNibbles(const uint8_t* qs, float d, float offset) {
  __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  __m128i mask = _mm_set1_epi8(0x0f);
  return {_mm_and_si128(bytes, mask), _mm_and_si128(_mm_srli_epi16(bytes, 4), mask),
          _mm256_set1_ps(d), _mm256_set1_ps(offset)};
}

STATICLM_AVX2 __m256 NibbleVector(const Nibbles& n, int v) {
  __m128i half = v < 2 ? n.low : n.high;
  __m128i bytes = (v & 1) ? _mm_unpackhi_epi64(half, half) : half;
  __m256 q = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
  return _mm256_add_ps(_mm256_mul_ps(q, n.d), n.offset);
}

struct Q4_0Block {
  static constexpr int kElements = 32;
  static constexpr int kVectors = 4;
  static constexpr size_t kBytes = 18;
  static constexpr bool kHasTail = false;
  using State = Nibbles;
  STATICLM_AVX2 static State Load(const uint8_t* block) {
    float d = LoadHalf(block);
    return LoadNibbles(block + 2, d, -8.0f * d);
  }
  STATICLM_AVX2 static __m256 Vector(const State& s, int v) { return NibbleVector(s, v); }
};

struct Q4_1Block {
  static constexpr int kElements = 32;
  static constexpr int kVectors = 4;
  static constexpr size_t kBytes = 20;
  static constexpr bool kHasTail = false;
  using State = Nibbles;
  STATICLM_AVX2 static State Load(const uint8_t* block) {
    return LoadNibbles(block + 4, LoadHalf(block), LoadHalf(block + 2));
  }
  STATICLM_AVX2 static __m256 Vector(const State& s, int v) { return NibbleVector(s, v); }
};

struct Q8_0Block {
  static constexpr int kElements = 32;
  static constexpr int kVectors = 4;
  static constexpr size_t kBytes = 34;
  static constexpr bool kHasTail = false;
  struct State {
    const uint8_t* qs;
    __m256 d;
  };
  STATICLM_AVX2 static State Load(const uint8_t* block) {
    return {block + 2, _mm256_set1_ps(LoadHalf(block))};
  }
  STATICLM_AVX2 static __m256 Vector(const State& s, int v) {
    __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(s.qs + 8 * v));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), s.d);
  }
};

// Plain types: a step is 8 elements; the last partial step goes through a zeroed copy.
struct F32Block {
  static constexpr int kElements = 8;
  static constexpr int kVectors = 1;
  static constexpr size_t kBytes = 32;
  static constexpr bool kHasTail = true;
  using State = const uint8_t*;
  STATICLM_AVX2 static State Load(const uint8_t* p) { return p; }
  STATICLM_AVX2 static __m256 Vector(State p, int) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
  }
};

struct F16Block {
  static constexpr int kElements = 8;
  static constexpr int kVectors = 1;
  static constexpr size_t kBytes = 16;
  static constexpr bool kHasTail = true;
  using State = const uint8_t*;
  STATICLM_AVX2 static State Load(const uint8_t* p) { return p; }
  STATICLM_AVX2 static __m256 Vector(State p, int) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
};

struct BF16Block {
  static constexpr int kElements = 8;
  static constexpr int kVectors = 1;
  static constexpr size_t kBytes = 16;
  static constexpr bool kHasTail = true;
  using State = const uint8_t*;
  STATICLM_AVX2 static State Load(const uint8_t* p) { return p; }
  STATICLM_AVX2 static __m256 Vector(State p, int) {
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

template <class B>
struct Tiles {
  template <int O, int R>
  STATICLM_AVX2_KERNEL static void Run(const TileArgs& a) {
    __m256 acc[O][R];
#pragma GCC unroll 4
    for (int o = 0; o < O; ++o) {
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) acc[o][r] = _mm256_setzero_ps();
    }
    const int64_t steps = a.n_in / B::kElements;
    for (int64_t s = 0; s < steps; ++s) {
      typename B::State state[O];
#pragma GCC unroll 4
      for (int o = 0; o < O; ++o) state[o] = B::Load(a.w + o * a.row_bytes + s * B::kBytes);
#pragma GCC unroll 4
      for (int v = 0; v < B::kVectors; ++v) {
#pragma GCC unroll 4
        for (int o = 0; o < O; ++o) {
          __m256 wv = B::Vector(state[o], v);
#pragma GCC unroll 4
          for (int r = 0; r < R; ++r) {
            __m256 xv = _mm256_loadu_ps(a.x + r * a.n_in + s * B::kElements + 8 * v);
            acc[o][r] = _mm256_fmadd_ps(wv, xv, acc[o][r]);
          }
        }
      }
    }
    if constexpr (B::kHasTail) {
      const int64_t done = steps * B::kElements;
      const int64_t rest = a.n_in - done;
      if (rest > 0) {
        const size_t element_bytes = B::kBytes / B::kElements;
        for (int o = 0; o < O; ++o) {
          alignas(32) uint8_t wtail[B::kBytes] = {};
          std::memcpy(wtail, a.w + o * a.row_bytes + steps * B::kBytes, rest * element_bytes);
          __m256 wv = B::Vector(B::Load(wtail), 0);
          for (int r = 0; r < R; ++r) {
            alignas(32) float xtail[8] = {};
            std::memcpy(xtail, a.x + r * a.n_in + done, rest * sizeof(float));
            acc[o][r] = _mm256_fmadd_ps(wv, _mm256_load_ps(xtail), acc[o][r]);
          }
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      for (int o = 0; o < O; ++o) a.y[r * a.n_out + o] = ReduceAdd(acc[o][r]);
    }
  }
};

// One row: four weight rows at a time hide the FMA latency. Several rows: 2 × 4 tiles keep
// the accumulators and decoded weights within the 16 ymm registers.
template <class B>
void Drive(const TileArgs& whole, int64_t rows, int64_t o_begin, int64_t o_end) {
  int tile_outputs = rows == 1 ? 4 : 2;
  tiles::DriveTiles<Tiles<B>>(whole, rows, o_begin, o_end, tile_outputs, tiles::kMaxTileRows);
}

}  // namespace

void MatMulRangeAvx2(DType type, const uint8_t* w, int64_t n_out, int64_t n_in, const float* x,
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
