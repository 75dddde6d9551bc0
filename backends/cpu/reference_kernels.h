// Reference kernels: plain loops with f32 accumulation, written to be checked by eye. They are
// the oracle every faster kernel (CPU SIMD, Vulkan, CUDA) is tested against, so they stay
// simple. None allocates; shapes are in the comments as (rows, width).
#pragma once

#include <cstdint>

#include "contract/dtype.h"
#include "contract/plan.h"

namespace staticlm::cpu::ref {

// out (rows, width) = table[tokens[r]]; table is (vocab, width) of `type`.
void Embed(DType type, const uint8_t* table, int64_t width, const int32_t* tokens, int64_t rows,
           float* out);

// y (rows, n) = x / sqrt(mean(x²) + eps) · weight
void RmsNorm(const float* x, const float* weight, int64_t rows, int64_t n, float eps, float* y);

// y (rows, n_out) = x (rows, n_in) · wᵀ, w being (n_out, n_in) of `type`.
void MatMul(DType type, const uint8_t* w, int64_t n_out, int64_t n_in, const float* x, int64_t rows,
            float* y);

// As MatMul for the output columns [o_begin, o_end) only: y keeps its row stride n_out, and its
// other columns are not written. Each y value is bit for bit DotRow's (dequantize.h).
void MatMulColumns(DType type, const uint8_t* w, int64_t n_out, int64_t n_in, const float* x,
                   int64_t rows, float* y, int64_t o_begin, int64_t o_end);

// Rotates x (rows, n_heads · head_dim) in place; row r is at position first_position + r.
// Pairs are adjacent elements (x[2i], x[2i+1]) with angle position · base^(−2i/head_dim): the
// layout GGUF stores Llama's Q and K in (its converter permutes the rows so that this equals
// Hugging Face's rotate-half on the original weights).
void Rope(float* x, int64_t rows, int64_t n_heads, int64_t head_dim, int32_t first_position,
          float base);

// As Rope, but pair i is (x[i], x[i + head_dim/2]): Hugging Face's rotate-half, for the
// architectures whose GGUF q and k rows are not permuted (OpParams::rope_halves).
void RopeHalves(float* x, int64_t rows, int64_t n_heads, int64_t head_dim, int32_t first_position,
                float base);

// RoPE with frequency factors and a scale (OpParams::rope_scale) over the first rope_dims
// elements of each head (partial RoPE; rope_dims = head_dim: all of it), pairs as RopeHalves
// (halves: (x[i], x[i + rope_dims/2])) or Rope: pair i turns by position ·
// base^(−2i/rope_dims) / factors[i] (Llama 3's rope_freqs, Phi-3's longrope factors; null: no
// factors), and its cos and sin are multiplied by `scale`. Elements from rope_dims on pass
// through.
void RopeScaled(float* x, int64_t rows, int64_t n_heads, int64_t head_dim, int64_t rope_dims,
                int32_t first_position, float base, const float* factors, float scale, bool halves);

// One layer's cache as the kernels see it: the op's parameters (policy, quantization, slots,
// heads; contract/plan.h) and its tensors' memory in KvLayout order. Unused pointers are null.
struct KvCacheView {
  OpParams params;
  DType type = DType::kF32;  // of k and v: F16 or F32 (no quantization), I8 (q8), KV_Q4 (q4)
  uint8_t* k = nullptr;      // (kv_heads, cache_slots, head_dim)
  uint8_t* v = nullptr;
  float* k_side = nullptr;    // q8: scales (kv_heads, slots); q4: (kv_heads, slots/group, 2, hd)
  float* v_side = nullptr;    // q8: scales (kv_heads, slots); q4: (kv_heads, slots, 2)
  float* k_recent = nullptr;  // q4: (kv_heads, recent_slots, head_dim)
  float* v_recent = nullptr;
  // kAttention of a sink cache: the layer's RoPE frequency factors (head_dim / 2), or null.
  const float* rope_factors = nullptr;
};

// Writes k and v (rows, kv_heads · head_dim), the rows of positions first_position + r, into
// one layer's cache at the slots its policy gives (contract/kv_policy.h). q8 stores each
// (token, head) row Hadamard-rotated (backends/cpu/hadamard.h), with scale max|x| / 127. q4 writes
// the full-precision rings, then quantizes every group this step completes: keys per channel,
// values per token, 4 bits, asymmetric.
void KvStore(const float* k, const float* v, int64_t rows, int32_t first_position,
             const KvCacheView& cache);

// Attention over one layer's cache, for query heads [head_begin, head_end). Row r of q
// (rows, n_heads · head_dim) is at position first_position + r and attends to the positions
// its policy gives; rows is the step's token count. Query head h reads KV head
// h / (n_heads / kv_heads). scores is scratch (n_heads, cache_slots): head h uses row h only,
// so disjoint head ranges can run concurrently.
void Attention(const float* q, int64_t rows, int32_t first_position, const KvCacheView& cache,
               float* scores, float* out, int64_t head_begin, int64_t head_end);

// The query head q rotated by `delta` positions into out as the layer's RoPE turns it, which
// a Sink cache's attention op's params say (head_dim, RopeDims, rope_base, rope_halves; as
// RopeScaled with `factors`, null for none, and no scale): how a Sink cache scores its sinks
// from the query's position inside the cache.
void RotateQuery(const float* q, const OpParams& p, int64_t delta, const float* factors,
                 float* out);

// One cached key or value element as f32: position t, KV head g, dim d. `step_end` is the end
// of the current step (q4 reads positions from QuantizedEnd(step_end) on from the rings). q8
// elements are in the Hadamard-rotated basis: attention rotates the query and its output.
float LoadKey(const KvCacheView& cache, int64_t step_end, int64_t t, int64_t g, int64_t d);
float LoadValue(const KvCacheView& cache, int64_t step_end, int64_t t, int64_t g, int64_t d);

// a[i] += b[i]
void Add(float* a, const float* b, int64_t n);

// x (rows, n) += bias (n), on every row
void AddBias(float* x, const float* bias, int64_t rows, int64_t n);

// gate[i] = silu(gate[i]) · up[i], silu(x) = x / (1 + e^−x)
void SiluMul(float* gate, const float* up, int64_t n);

// gate[i] = gelu(gate[i]) · up[i], with GELU's tanh approximation
// gelu(x) = x/2 · (1 + tanh(sqrt(2/π) · (x + 0.044715 x³)))
void GeluMul(float* gate, const float* up, int64_t n);

// x[i] = e^(x[i] − max) / Σ e^(x[j] − max)
void Softmax(float* x, int64_t n);

}  // namespace staticlm::cpu::ref
