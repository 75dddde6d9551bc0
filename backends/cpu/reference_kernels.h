// Reference kernels: plain loops with f32 accumulation, written to be checked by eye. They are
// the oracle every faster kernel (CPU SIMD, Vulkan, CUDA) is tested against, so they stay
// simple. None allocates; shapes are in the comments as (rows, width).
#pragma once

#include <cstdint>

#include "backends/dtype.h"

namespace staticlm::cpu::ref {

// out (rows, width) = table[tokens[r]]; table is (vocab, width) of `type`.
void Embed(DType type, const uint8_t* table, int64_t width, const int32_t* tokens, int64_t rows,
           float* out);

// y (rows, n) = x / sqrt(mean(x²) + eps) · weight
void RmsNorm(const float* x, const float* weight, int64_t rows, int64_t n, float eps, float* y);

// y (rows, n_out) = x (rows, n_in) · wᵀ, w being (n_out, n_in) of `type`.
void MatMul(DType type, const uint8_t* w, int64_t n_out, int64_t n_in, const float* x, int64_t rows,
            float* y);

// Rotates x (rows, n_heads · head_dim) in place; row r is at position first_position + r.
// Pairs are adjacent elements (x[2i], x[2i+1]) with angle position · base^(−2i/head_dim): the
// layout GGUF stores Llama's Q and K in (its converter permutes the rows so that this equals
// Hugging Face's rotate-half on the original weights).
void Rope(float* x, int64_t rows, int64_t n_heads, int64_t head_dim, int32_t first_position,
          float base);

// Writes k and v (rows, kv_heads · head_dim) into one layer's caches, laid out
// (kv_heads, capacity, head_dim) of `cache_type` (F32 or F16), at slots first_slot + r.
void KvStore(const float* k, const float* v, int64_t rows, int64_t kv_heads, int64_t head_dim,
             int64_t capacity, int32_t first_slot, DType cache_type, uint8_t* k_cache,
             uint8_t* v_cache);

// Causal attention over a Static cache (slot = position), for query heads [head_begin,
// head_end). Row r of q (rows, n_heads · head_dim) is at position first_position + r and
// attends to slots 0 … that position. Query head h reads KV head h / (n_heads / kv_heads).
// scores is scratch (n_heads, capacity): head h uses row h only, so disjoint head ranges can
// run concurrently.
void Attention(const float* q, int64_t rows, int64_t n_heads, int64_t kv_heads, int64_t head_dim,
               int64_t capacity, int32_t first_position, float scale, DType cache_type,
               const uint8_t* k_cache, const uint8_t* v_cache, float* scores, float* out,
               int64_t head_begin, int64_t head_end);

// a[i] += b[i]
void Add(float* a, const float* b, int64_t n);

// gate[i] = silu(gate[i]) · up[i], silu(x) = x / (1 + e^−x)
void SiluMul(float* gate, const float* up, int64_t n);

// x[i] = e^(x[i] − max) / Σ e^(x[j] − max)
void Softmax(float* x, int64_t n);

}  // namespace staticlm::cpu::ref
