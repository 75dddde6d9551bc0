// Fast attention (AVX-512 or AVX2 + FMA + F16C on x86-64, NEON on arm64) over every cache policy,
// for F16, F32, q8 and q4 caches (q4: fast_attention_q4.h), with the contract of ref::Attention:
// same arguments, same results up to the order of float additions. Each (row, head) is computed
// by one call in a fixed order, so results do not depend on threads.
#pragma once

#include <cstdint>

#include "backends/cpu/attention_split.h"
#include "backends/cpu/reference_kernels.h"
#include "platform/cpu_features.h"

namespace staticlm::cpu {

using AttentionFn = void (*)(const float* q, int64_t rows, int32_t first_position,
                             const ref::KvCacheView& cache, float* scores, float* out,
                             int64_t head_begin, int64_t head_end);

// The fastest attention `features` allow for heads of `head_dim`: AVX-512 (a multiple of 16, at
// most 256) or AVX2 (a multiple of 8, at most 256), both serving the query heads of a KV head
// together; NEON (of 4); else ref::Attention; every cache type, q4 through the ISA's q4 kernel.
// *name receives "avx512", "avx2", "neon" or "reference"; *serves_groups (when given) whether a
// call is fastest with whole KV-head groups of heads [g · n_heads / kv_heads, (g + 1) · n_heads /
// kv_heads) rather than one head, for caches quantized as `kv_quant`; *part (when given) the
// kernel's AttentionPartFn for decode rows split over their keys (attention_split.h), or null
// when it has none (AVX-512 and AVX2 have one for every cache type). Init only.
AttentionFn SelectAttention(const CpuFeatures& features, int64_t head_dim, const char** name,
                            bool* serves_groups = nullptr, KvQuant kv_quant = KvQuant::kNone,
                            AttentionPartFn* part = nullptr);

namespace detail {
#if defined(__x86_64__)
// backends/cpu/arch/x86/fast_attention_avx2.cpp
bool Avx2AttentionTakes(int64_t head_dim);
void AttentionAvx2(const float* q, int64_t rows, int32_t first_position,
                   const ref::KvCacheView& cache, float* scores, float* out, int64_t head_begin,
                   int64_t head_end);
void AttentionPartAvx2(const float* q_row, int64_t position, const ref::KvCacheView& cache,
                       float* scores, int64_t head_begin, int64_t head_end, int64_t key_begin,
                       int64_t key_end, float* parts, int64_t head_stride);
// backends/cpu/arch/x86/fast_attention_avx512.cpp
bool Avx512AttentionTakes(int64_t head_dim);
void AttentionAvx512(const float* q, int64_t rows, int32_t first_position,
                     const ref::KvCacheView& cache, float* scores, float* out, int64_t head_begin,
                     int64_t head_end);
void AttentionPartAvx512(const float* q_row, int64_t position, const ref::KvCacheView& cache,
                         float* scores, int64_t head_begin, int64_t head_end, int64_t key_begin,
                         int64_t key_end, float* parts, int64_t head_stride);
// backends/cpu/arch/x86/fast_attention_q4_avx512.cpp and _avx2.cpp: q4 caches only; AVX-512 takes
// Avx512AttentionTakes head sizes, AVX2 multiples of 8; both serve KV-head groups.
void AttentionQ4Avx512(const float* q, int64_t rows, int32_t first_position,
                       const ref::KvCacheView& cache, float* scores, float* out, int64_t head_begin,
                       int64_t head_end);
void AttentionQ4Avx2(const float* q, int64_t rows, int32_t first_position,
                     const ref::KvCacheView& cache, float* scores, float* out, int64_t head_begin,
                     int64_t head_end);
// Their parts of a decode row split over its keys (AttentionPartFn, attention_split.h).
void AttentionQ4PartAvx512(const float* q_row, int64_t position, const ref::KvCacheView& cache,
                           float* scores, int64_t head_begin, int64_t head_end, int64_t key_begin,
                           int64_t key_end, float* parts, int64_t head_stride);
void AttentionQ4PartAvx2(const float* q_row, int64_t position, const ref::KvCacheView& cache,
                         float* scores, int64_t head_begin, int64_t head_end, int64_t key_begin,
                         int64_t key_end, float* parts, int64_t head_stride);
#endif
#if defined(__aarch64__)
// backends/cpu/arch/arm/fast_attention_neon.cpp
void AttentionNeon(const float* q, int64_t rows, int32_t first_position,
                   const ref::KvCacheView& cache, float* scores, float* out, int64_t head_begin,
                   int64_t head_end);
// backends/cpu/arch/arm/fast_attention_q4_neon.cpp: q4 caches only, head sizes of a multiple of 4.
void AttentionQ4Neon(const float* q, int64_t rows, int32_t first_position,
                     const ref::KvCacheView& cache, float* scores, float* out, int64_t head_begin,
                     int64_t head_end);
#endif
}  // namespace detail

}  // namespace staticlm::cpu
