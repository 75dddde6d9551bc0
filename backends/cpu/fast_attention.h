// Fast causal attention over a Static cache (AVX2 + FMA + F16C), with the contract of
// ref::Attention: same arguments, same results up to the order of float additions. Each
// (row, head) is computed by one call in a fixed order, so results do not depend on threads.
#pragma once

#include <cstdint>

#include "backends/dtype.h"
#include "platform/cpu_features.h"

namespace staticlm::cpu {

using AttentionFn = void (*)(const float* q, int64_t rows, int64_t n_heads, int64_t kv_heads,
                             int64_t head_dim, int64_t capacity, int32_t first_position,
                             float scale, DType cache_type, const uint8_t* k_cache,
                             const uint8_t* v_cache, float* scores, float* out, int64_t head_begin,
                             int64_t head_end);

// The fastest attention `features` allow for heads of `head_dim` (the SIMD one needs a multiple
// of 8); ref::Attention otherwise. *name receives "avx2" or "reference". Init only.
AttentionFn SelectAttention(const CpuFeatures& features, int64_t head_dim, const char** name);

}  // namespace staticlm::cpu
