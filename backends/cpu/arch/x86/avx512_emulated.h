// The AVX-512 intrinsics from SIMDe (Debian: libsimde-dev), for the kernel tests of a build
// with STATICLM_AVX512_EMULATED (scripts/test-avx512-emulated): the AVX-512 kernels then run
// on a CPU with AVX2 only, each 512-bit intrinsic computed by SIMDe's portable code, so their
// logic is tested against the reference kernels on every x86 machine, as qemu does for the
// NEON kernels. Such a build is for those tests only: it reports AVX-512 on any CPU with AVX2
// (platform/cpu_features.cpp) and is not meant to be fast.
//
// The including file is compiled with -mavx2 -mfma -mf16c, so SIMDe keeps the 128- and 256-bit
// intrinsics native and builds the 512-bit ones on them (GCC's 512-bit vector types, which
// <immintrin.h> declares whatever the target, hold the values).
#pragma once

#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
#error "STATICLM_AVX512_EMULATED needs -mavx2 -mfma -mf16c for the AVX-512 kernel files"
#endif

#include <immintrin.h>

#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>

#include <cstdint>
#include <cstring>

// The intrinsics the kernels use that SIMDe 0.7.4 (Debian 12's) lacks, written here on AVX2
// halves or lane by lane, each as Intel defines it. The horizontal reductions follow the order
// GCC's own <avx512fintrin.h> uses, so that an emulated sum rounds as the native one does.
namespace staticlm::avx512_emulated {

template <class Wide, class Half>
__attribute__((always_inline)) inline Wide Join(Half low, Half high) {
  static_assert(sizeof(Wide) == 2 * sizeof(Half));
  Wide w;
  std::memcpy(&w, &low, sizeof(Half));
  std::memcpy(reinterpret_cast<char*>(&w) + sizeof(Half), &high, sizeof(Half));
  return w;
}
template <class Half, class Wide>
__attribute__((always_inline)) inline Half HalfOf(Wide w, int which) {
  Half h;
  std::memcpy(&h, reinterpret_cast<const char*>(&w) + which * sizeof(Half), sizeof(Half));
  return h;
}
template <class T, class V>
__attribute__((always_inline)) inline void ToLanes(V v, T* lanes) {
  std::memcpy(lanes, &v, sizeof(V));
}
template <class V, class T>
__attribute__((always_inline)) inline V FromLanes(const T* lanes) {
  V v;
  std::memcpy(&v, lanes, sizeof(V));
  return v;
}

inline __m512 CvtphPs(__m256i a) {
  return Join<__m512>(_mm256_cvtph_ps(_mm256_castsi256_si128(a)),
                      _mm256_cvtph_ps(_mm256_extracti128_si256(a, 1)));
}
inline __m512 Cvtepi32Ps(__m512i a) {
  return Join<__m512>(_mm256_cvtepi32_ps(HalfOf<__m256i>(a, 0)),
                      _mm256_cvtepi32_ps(HalfOf<__m256i>(a, 1)));
}
inline __m512i CvtpsEpi32(__m512 a) {  // rounds as MXCSR says, as vcvtps2dq does
  return Join<__m512i>(_mm256_cvtps_epi32(HalfOf<__m256>(a, 0)),
                       _mm256_cvtps_epi32(HalfOf<__m256>(a, 1)));
}
inline __m512i Cvtepi8Epi32(__m128i a) {
  return Join<__m512i>(_mm256_cvtepi8_epi32(a), _mm256_cvtepi8_epi32(_mm_srli_si128(a, 8)));
}
inline __m512i Cvtepu8Epi32(__m128i a) {
  return Join<__m512i>(_mm256_cvtepu8_epi32(a), _mm256_cvtepu8_epi32(_mm_srli_si128(a, 8)));
}
inline __m512i Cvtepu16Epi32(__m256i a) {
  return Join<__m512i>(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(a)),
                       _mm256_cvtepu16_epi32(_mm256_extracti128_si256(a, 1)));
}
inline __m256i Cvtepi32Epi16(__m512i a) {  // vpmovdw: truncation
  int32_t in[16];
  int16_t out[16];
  ToLanes(a, in);
  for (int i = 0; i < 16; ++i) out[i] = static_cast<int16_t>(in[i]);
  return FromLanes<__m256i>(out);
}
inline __m128i Cvtepi32Epi8(__m512i a) {  // vpmovdb: truncation
  int32_t in[16];
  int8_t out[16];
  ToLanes(a, in);
  for (int i = 0; i < 16; ++i) out[i] = static_cast<int8_t>(in[i]);
  return FromLanes<__m128i>(out);
}
inline __m512i SraiEpi32(__m512i a, unsigned int count) {
  const __m128i c = _mm_cvtsi32_si128(static_cast<int>(count > 31 ? 31 : count));
  return Join<__m512i>(_mm256_sra_epi32(HalfOf<__m256i>(a, 0), c),
                       _mm256_sra_epi32(HalfOf<__m256i>(a, 1), c));
}
template <int kImm>
inline __m512 PermutePs(__m512 a) {  // each 128-bit lane as _mm_permute_ps
  float in[16], out[16];
  ToLanes(a, in);
  for (int i = 0; i < 16; ++i) out[i] = in[(i & ~3) + ((kImm >> (2 * (i & 3))) & 3)];
  return FromLanes<__m512>(out);
}
template <int kImm>
inline __m512 ShuffleF32x4(__m512 a, __m512 b) {  // 128-bit lanes 0-1 from a, 2-3 from b
  float x[16], y[16], out[16];
  ToLanes(a, x);
  ToLanes(b, y);
  for (int lane = 0; lane < 4; ++lane) {
    const float* from = lane < 2 ? x : y;
    std::memcpy(out + 4 * lane, from + 4 * ((kImm >> (2 * lane)) & 3), 4 * sizeof(float));
  }
  return FromLanes<__m512>(out);
}
inline float ReduceAddPs(__m512 a) {
  const __m256 t3 = _mm256_add_ps(HalfOf<__m256>(a, 1), HalfOf<__m256>(a, 0));
  const __m128 t6 = _mm_add_ps(_mm256_extractf128_ps(t3, 1), _mm256_castps256_ps128(t3));
  const __m128 t8 = _mm_add_ps(t6, _mm_shuffle_ps(t6, t6, _MM_SHUFFLE(1, 0, 3, 2)));
  return _mm_cvtss_f32(t8) + _mm_cvtss_f32(_mm_shuffle_ps(t8, t8, _MM_SHUFFLE(0, 1, 0, 1)));
}
inline float ReduceMaxPs(__m512 a) {
  const __m256 t3 = _mm256_max_ps(HalfOf<__m256>(a, 1), HalfOf<__m256>(a, 0));
  const __m128 t6 = _mm_max_ps(_mm256_extractf128_ps(t3, 1), _mm256_castps256_ps128(t3));
  const __m128 t8 = _mm_max_ps(t6, _mm_shuffle_ps(t6, t6, _MM_SHUFFLE(1, 0, 3, 2)));
  return _mm_cvtss_f32(_mm_max_ps(t8, _mm_shuffle_ps(t8, t8, _MM_SHUFFLE(0, 1, 0, 1))));
}
inline int ReduceAddEpi32(__m512i a) {
  int32_t lanes[16];
  ToLanes(a, lanes);
  uint32_t sum = 0;  // wraps as the vector adds do
  for (int32_t v : lanes) sum += static_cast<uint32_t>(v);
  return static_cast<int32_t>(sum);
}
inline __m512i MaskI32GatherEpi32(__m512i src, __mmask16 k, __m512i index, const void* base,
                                  int scale) {
  int32_t out[16], at[16];
  ToLanes(src, out);
  ToLanes(index, at);
  for (int i = 0; i < 16; ++i) {
    if ((k >> i) & 1) {
      std::memcpy(&out[i], static_cast<const char*>(base) + static_cast<int64_t>(at[i]) * scale,
                  sizeof(int32_t));
    }
  }
  return FromLanes<__m512i>(out);
}
// The 16 lanes of type T at p that k selects, zero elsewhere; reads only the selected ones.
template <class V, class T>
inline V MaskzLoadu(__mmask16 k, const void* p) {
  static_assert(sizeof(V) == 16 * sizeof(T));
  T out[16];
  for (int i = 0; i < 16; ++i) {
    out[i] = T{0};
    if ((k >> i) & 1) std::memcpy(&out[i], static_cast<const T*>(p) + i, sizeof(T));
  }
  return FromLanes<V>(out);
}
inline void MaskStoreuPs(void* p, __mmask16 k, __m512 a) {  // writes only the lanes in k
  float in[16];
  ToLanes(a, in);
  for (int i = 0; i < 16; ++i) {
    if ((k >> i) & 1) std::memcpy(static_cast<float*>(p) + i, &in[i], sizeof(float));
  }
}
inline __mmask16 TestEpi8Mask(__m128i a, __m128i b) {
  const __m128i zero = _mm_cmpeq_epi8(_mm_and_si128(a, b), _mm_setzero_si128());
  return static_cast<__mmask16>(~_mm_movemask_epi8(zero) & 0xffff);
}

}  // namespace staticlm::avx512_emulated

#define _mm512_cvtph_ps(a) staticlm::avx512_emulated::CvtphPs(a)
#define _mm512_cvtepi32_ps(a) staticlm::avx512_emulated::Cvtepi32Ps(a)
#define _mm512_cvtps_epi32(a) staticlm::avx512_emulated::CvtpsEpi32(a)
#define _mm512_cvtepi8_epi32(a) staticlm::avx512_emulated::Cvtepi8Epi32(a)
#define _mm512_cvtepu8_epi32(a) staticlm::avx512_emulated::Cvtepu8Epi32(a)
#define _mm512_cvtepu16_epi32(a) staticlm::avx512_emulated::Cvtepu16Epi32(a)
#define _mm512_cvtepi32_epi16(a) staticlm::avx512_emulated::Cvtepi32Epi16(a)
#define _mm512_cvtepi32_epi8(a) staticlm::avx512_emulated::Cvtepi32Epi8(a)
#define _mm512_srai_epi32(a, count) staticlm::avx512_emulated::SraiEpi32(a, count)
#define _mm512_permute_ps(a, imm) staticlm::avx512_emulated::PermutePs<(imm)>(a)
#define _mm512_shuffle_f32x4(a, b, imm) staticlm::avx512_emulated::ShuffleF32x4<(imm)>(a, b)
#define _mm512_reduce_add_ps(a) staticlm::avx512_emulated::ReduceAddPs(a)
#define _mm512_reduce_max_ps(a) staticlm::avx512_emulated::ReduceMaxPs(a)
#define _mm512_reduce_add_epi32(a) staticlm::avx512_emulated::ReduceAddEpi32(a)
#define _mm512_i32gather_epi32(index, base, scale) \
  staticlm::avx512_emulated::MaskI32GatherEpi32(_mm512_setzero_si512(), 0xffff, index, base, scale)
#define _mm512_mask_i32gather_epi32(src, k, index, base, scale) \
  staticlm::avx512_emulated::MaskI32GatherEpi32(src, k, index, base, scale)
#define _mm512_maskz_loadu_ps(k, p) staticlm::avx512_emulated::MaskzLoadu<__m512, float>(k, p)
#define _mm512_mask_storeu_ps(p, k, a) staticlm::avx512_emulated::MaskStoreuPs(p, k, a)
#define _mm256_maskz_loadu_epi16(k, p) staticlm::avx512_emulated::MaskzLoadu<__m256i, int16_t>(k, p)
#define _mm_test_epi8_mask(a, b) staticlm::avx512_emulated::TestEpi8Mask(a, b)

// No target attributes: the whole file is compiled for AVX2, and SIMDe is plain code.
#define STATICLM_TARGET_AVX512
#define STATICLM_TARGET_AVX512_INLINE __attribute__((always_inline)) inline
#define STATICLM_VNNI __attribute__((always_inline)) inline
#define STATICLM_VNNI_KERNEL
#define STATICLM_AVX512 __attribute__((always_inline)) inline
#define STATICLM_AVX512_KERNEL
