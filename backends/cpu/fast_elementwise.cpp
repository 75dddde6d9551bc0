#include "backends/cpu/fast_elementwise.h"

#include <algorithm>
#include <cmath>

#include "backends/cpu/arch/x86/exp_avx2.h"
#include "backends/cpu/reference_kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define STATICLM_HAVE_X86_ELEMENTWISE 1
#define STATICLM_AVX2 __attribute__((target("avx2,fma")))
#define STATICLM_AVX2_INLINE __attribute__((target("avx2,fma"), always_inline)) inline
#endif

namespace staticlm::cpu {
namespace {

#if defined(STATICLM_HAVE_X86_ELEMENTWISE)

// Lanes added pairwise in a fixed order.
STATICLM_AVX2_INLINE float ReduceMax(__m256 v) {
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  __m128 m2 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  return _mm_cvtss_f32(_mm_max_ss(m2, _mm_shuffle_ps(m2, m2, 1)));
}

STATICLM_AVX2 void RmsNormAvx2(const float* x, const float* weight, int64_t rows, int64_t n,
                               float eps, float* y) {
  const int64_t full = n / 8 * 8;
  const __m256i tail = TailMaskAvx2(n - full);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    __m256 sum = _mm256_setzero_ps();
    for (int64_t i = 0; i < full; i += 8) {
      __m256 v = _mm256_loadu_ps(xr + i);
      sum = _mm256_fmadd_ps(v, v, sum);
    }
    if (full < n) {
      __m256 v = _mm256_maskload_ps(xr + full, tail);
      sum = _mm256_fmadd_ps(v, v, sum);
    }
    const float inv_rms = 1.0f / std::sqrt(SumLanesAvx2(sum) / static_cast<float>(n) + eps);
    const __m256 scale = _mm256_set1_ps(inv_rms);
    for (int64_t i = 0; i < full; i += 8) {
      __m256 v = _mm256_mul_ps(_mm256_loadu_ps(xr + i), scale);
      _mm256_storeu_ps(yr + i, _mm256_mul_ps(v, _mm256_loadu_ps(weight + i)));
    }
    for (int64_t i = full; i < n; ++i) yr[i] = xr[i] * inv_rms * weight[i];
  }
}

STATICLM_AVX2 void SiluMulAvx2(float* gate, const float* up, int64_t n) {
  const int64_t full = n / 8 * 8;
  const __m256 one = _mm256_set1_ps(1.0f);
  for (int64_t i = 0; i < full; i += 8) {
    __m256 g = _mm256_loadu_ps(gate + i);
    __m256 e = ExpAvx2(_mm256_sub_ps(_mm256_setzero_ps(), g));
    __m256 silu = _mm256_div_ps(g, _mm256_add_ps(one, e));
    _mm256_storeu_ps(gate + i, _mm256_mul_ps(silu, _mm256_loadu_ps(up + i)));
  }
  for (int64_t i = full; i < n; ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

// gate · up · gelu_tanh(gate) / gate = x · up / (1 + e^(−2u)), u = √(2/π) · (x + 0.044715 x³)
// computed as the reference computes it. For x ≪ 0, e^(−2u) clamps at e^88.3 and the result is
// below |x · up| · 1e-38, where the reference's 1 + tanh(u) cancels to 0.
STATICLM_AVX2 void GeluMulAvx2(float* gate, const float* up, int64_t n) {
  const int64_t full = n / 8 * 8;
  const __m256 k = _mm256_set1_ps(0.7978845608028654f), c = _mm256_set1_ps(0.044715f);
  const __m256 one = _mm256_set1_ps(1.0f), minus_two = _mm256_set1_ps(-2.0f);
  for (int64_t i = 0; i < full; i += 8) {
    const __m256 x = _mm256_loadu_ps(gate + i);
    const __m256 cubic = _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(c, x), x), x);
    const __m256 u = _mm256_mul_ps(k, _mm256_add_ps(x, cubic));
    const __m256 e = ExpAvx2(_mm256_mul_ps(minus_two, u));
    const __m256 xy = _mm256_mul_ps(x, _mm256_loadu_ps(up + i));
    _mm256_storeu_ps(gate + i, _mm256_div_ps(xy, _mm256_add_ps(one, e)));
  }
  for (int64_t i = full; i < n; ++i) {
    const float x = gate[i];
    const float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
    gate[i] = x * up[i] / (1.0f + std::exp(std::min(-2.0f * u, 88.3f)));
  }
}

STATICLM_AVX2 void SoftmaxAvx2(float* x, int64_t n) {
  const int64_t full = n / 8 * 8;
  const __m256i tail = TailMaskAvx2(n - full);
  __m256 vmax = _mm256_set1_ps(-INFINITY);
  for (int64_t i = 0; i < full; i += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(x + i));
  if (full < n) {
    __m256 v = _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), _mm256_maskload_ps(x + full, tail),
                                _mm256_castsi256_ps(tail));
    vmax = _mm256_max_ps(vmax, v);
  }
  const __m256 inv = _mm256_set1_ps(1.0f / ExpSumInPlaceAvx2(x, n, ReduceMax(vmax)));
  for (int64_t i = 0; i < full; i += 8) {
    _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), inv));
  }
  for (int64_t i = full; i < n; ++i) x[i] *= _mm256_cvtss_f32(inv);
}

#endif  // STATICLM_HAVE_X86_ELEMENTWISE

}  // namespace

ElementwiseKernels Avx2Elementwise() {
#if defined(STATICLM_HAVE_X86_ELEMENTWISE)
  return {RmsNormAvx2, SiluMulAvx2, SoftmaxAvx2, "avx2", GeluMulAvx2};
#else
  return {nullptr, nullptr, nullptr, "avx2", nullptr};
#endif
}

ElementwiseKernels SelectElementwise(const CpuFeatures& features, bool reference) {
  ElementwiseKernels chosen = {ref::RmsNorm, ref::SiluMul, ref::Softmax, "reference", nullptr};
  ElementwiseKernels avx2 = Avx2Elementwise();
  ElementwiseKernels neon = NeonElementwise();
  if (!reference && features.avx2 && features.fma && avx2.rms_norm != nullptr) {
    chosen = avx2;
  } else if (!reference && features.neon && neon.rms_norm != nullptr) {
    chosen = neon;
  }
  if (chosen.gelu_mul == nullptr) chosen.gelu_mul = ref::GeluMul;
  return chosen;
}

}  // namespace staticlm::cpu
