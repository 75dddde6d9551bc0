// Attention over q4 caches (KIVI, contract/plan.h KvQuant::kQ4) for the SIMD kernels. One driver
// (fast_attention_q4.cpp) walks the positions a (row, KV-head group) attends in runs — the tokens
// of one quantized key group, consecutive quantized value rows, or consecutive rows of the f32
// rings — and hands each run to one ISA's primitives (fast_attention_q4_avx512.cpp,
// fast_attention_q4_avx2.cpp, fast_attention_q4_neon.cpp). Keys are quantized per channel over a
// group, so q · k = Σ_d (q_d·s_d)·n_d + Σ_d q_d·m_d: the group's scales are folded into the query
// and its mins into a bias once per group, and each key costs a nibble unpack and a multiply-add
// per channel. Values are quantized per token: Σ_t p_t·(s_t·n_t + m_t) = Σ_t (p_t·s_t)·n_t + Σ_t
// p_t·m_t.
#pragma once

#include <cstdint>

#include "backends/cpu/reference_kernels.h"

namespace staticlm::cpu::q4 {

constexpr int kMaxHeads = 4;            // query heads served per pass over a KV head's cache
constexpr int64_t kMaxQ4HeadDim = 256;  // head_dim ≤ 256 (plan validation)

// The query heads of one pass, sharing a KV head. Head g's arithmetic never depends on the
// others, so a head computes bitwise the same alone or in a pass.
struct Pass {
  int n = 0;
  int64_t head_dim = 0;
  float scale = 0.0f;              // of the scores
  const float* q[kMaxHeads] = {};  // each head's query (head_dim)
  float* scores[kMaxHeads] = {};   // each head's scores row (positions in attended order)
  float* out[kMaxHeads] = {};      // each head's output (head_dim), accumulated into
};

// One ISA's primitives over a run of `count` keys or values whose scores start at `at`.
// Codes are rows of head_dim 4-bit codes (head_dim / 2 bytes, low nibble first); rows are f32.
struct Kernels {
  int max_heads;  // the largest pass the primitives take
  // scores[g][at + i] = scale · (q[g] · (scales ∘ codes_i + mins)) for keys of one group, params
  // holding its scales (head_dim) then its mins; vmax[g] keeps the largest score.
  void (*score_codes)(const Pass& pass, const uint8_t* codes, const float* params, int64_t count,
                      int64_t at, float* vmax);
  // scores[g][at + i] = scale · (q[g] · rows_i); vmax[g] keeps the largest score.
  void (*score_rows)(const Pass& pass, const float* rows, int64_t count, int64_t at, float* vmax);
  // out[g] += Σ_i (scores[g][at + i] · params[2i]) · codes_i; bias[g] += Σ_i scores[g][at + i] ·
  // params[2i + 1] (params: each row's scale and min; AddMins).
  void (*add_codes)(const Pass& pass, const uint8_t* codes, const float* params, int64_t count,
                    int64_t at, float* bias);
  // out[g] += Σ_i scores[g][at + i] · rows_i.
  void (*add_rows)(const Pass& pass, const float* rows, int64_t count, int64_t at);
  // x[i] = e^(x[i] − max) for i < n; returns their sum.
  float (*exp_sum)(float* x, int64_t n, float max);
};

// bias[g] += Σ_i scores[g][at + i] · params[2i + 1]: the values' mins, for add_codes.
void AddMins(const Pass& pass, const float* params, int64_t count, int64_t at, float* bias);

// ref::Attention's contract for q4 caches, each (row, query head) computed in a fixed order by
// `kernels`; a Sink cache's sinks are scored with the query turned as ref::RotateQuery turns it.
void Attend(const Kernels& kernels, const float* q, int64_t rows, int32_t first_position,
            const ref::KvCacheView& cache, float* scores, float* out, int64_t head_begin,
            int64_t head_end);

// AttentionPartFn's contract (attention_split.h) for q4 caches: a decode row's part over keys
// [key_begin, key_end) of those it attends, each pass of query heads sharing a KV head.
void AttendPart(const Kernels& kernels, const float* q_row, int64_t position,
                const ref::KvCacheView& cache, float* scores, int64_t head_begin, int64_t head_end,
                int64_t key_begin, int64_t key_end, float* parts, int64_t head_stride);

}  // namespace staticlm::cpu::q4
