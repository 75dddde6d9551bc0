// The lane sums of up to four AVX2 accumulators at once, in one order whatever their number:
// the grouped attention kernels (fast_attention_avx2.cpp, fast_attention_q4_avx2.cpp) reduce
// several keys' dot products together, and a key's score must not depend on how many keys or
// heads share its reduction (a head per call gives the same bits as a pass of four).
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

namespace staticlm::cpu {

// The lane sums of acc[0 … J) into sums[0 … J) (J = 1, 2 or 4; for J > 1 sums holds four floats,
// lanes past J repeating the first sums), each as ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 +
// a7)).
template <int J>
__attribute__((target("avx2"), always_inline)) inline void LaneSums(const __m256* acc,
                                                                    float* sums) {
  static_assert(J == 1 || J == 2 || J == 4);
  const __m256 ab = _mm256_hadd_ps(acc[0], J >= 2 ? acc[1] : acc[0]);
  const __m256 cd = J == 4 ? _mm256_hadd_ps(acc[2], acc[3]) : ab;
  const __m256 abcd = _mm256_hadd_ps(ab, cd);
  const __m128 four = _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
  if constexpr (J == 1) {
    sums[0] = _mm_cvtss_f32(four);
  } else {
    _mm_storeu_ps(sums, four);
  }
}

}  // namespace staticlm::cpu

#endif  // defined(__x86_64__)
