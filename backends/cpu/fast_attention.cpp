#include "backends/cpu/fast_attention.h"

#include <cstdint>

#include "contract/kv_policy.h"

#if defined(__x86_64__)
#define STATICLM_HAVE_X86_ATTENTION 1
#endif

namespace staticlm::cpu {
namespace {

#if defined(STATICLM_HAVE_X86_ATTENTION)
// The AVX-512 kernels for every cache type: q4 caches take their own.
void AttentionAvx512AnyCache(const float* q, int64_t rows, int32_t first_position,
                             const ref::KvCacheView& cache, float* scores, float* out,
                             int64_t head_begin, int64_t head_end) {
  const AttentionFn fn =
      cache.params.kv_quant == KvQuant::kQ4 ? detail::AttentionQ4Avx512 : detail::AttentionAvx512;
  fn(q, rows, first_position, cache, scores, out, head_begin, head_end);
}
#endif

#if defined(__aarch64__)
// The NEON kernels for every cache type: q4 caches take their own.
void AttentionNeonAnyCache(const float* q, int64_t rows, int32_t first_position,
                           const ref::KvCacheView& cache, float* scores, float* out,
                           int64_t head_begin, int64_t head_end) {
  const AttentionFn fn =
      cache.params.kv_quant == KvQuant::kQ4 ? detail::AttentionQ4Neon : detail::AttentionNeon;
  fn(q, rows, first_position, cache, scores, out, head_begin, head_end);
}
#endif

}  // namespace

AttentionFn SelectAttention(const CpuFeatures& features, int64_t head_dim, const char** name,
                            bool* serves_groups, KvQuant kv_quant, AttentionPartFn* part) {
  if (serves_groups != nullptr) *serves_groups = false;
  if (part != nullptr) *part = nullptr;
#if defined(STATICLM_HAVE_X86_ATTENTION)
  if (features.avx512f && features.avx512vl && features.fma && features.f16c &&
      detail::Avx512AttentionTakes(head_dim)) {
    *name = "avx512";
    if (serves_groups != nullptr) *serves_groups = true;
    if (part != nullptr) {
      *part =
          kv_quant == KvQuant::kQ4 ? detail::AttentionQ4PartAvx512 : detail::AttentionPartAvx512;
    }
    return AttentionAvx512AnyCache;
  }
  if (features.avx2 && features.fma && features.f16c && detail::Avx2AttentionTakes(head_dim)) {
    *name = "avx2";
    if (serves_groups != nullptr) *serves_groups = true;
    if (part != nullptr) {
      *part = kv_quant == KvQuant::kQ4 ? detail::AttentionQ4PartAvx2 : detail::AttentionPartAvx2;
    }
    return detail::AttentionAvx2;
  }
#endif
#if defined(__aarch64__)
  if (features.neon && head_dim % 4 == 0) {
    *name = "neon";
    return AttentionNeonAnyCache;
  }
#endif
  (void)features;
  (void)head_dim;
  (void)kv_quant;
  *name = "reference";
  return ref::Attention;
}

}  // namespace staticlm::cpu
