// RoPE's cos and sin for one step's positions, computed once per step and shared by every
// rope op of the step (Q and K of every layer: 60 ops for SmolLM2), where the reference
// recomputes a pow, a cos and a sin per pair in every op. The angles are computed with the
// reference's own arithmetic, so rotating with them gives bitwise ref::Rope's results.
#pragma once

#include <cstdint>
#include <vector>

#include "platform/status.h"

namespace staticlm::cpu {

class RopeAngles {
 public:
  // Init only: room for `max_rows` positions of heads up to `max_head_dim`.
  Status Init(int64_t max_rows, int64_t max_head_dim);

  // Run phase: (cos, sin) pairs, [rows][head_dim / 2][2], of positions first_position …
  // first_position + rows − 1; recomputed only when the arguments differ from the last call.
  // nullptr when rows and head_dim do not fit Init's sizes. `factors` (head_dim / 2 frequency
  // divisors, or null) and `scale` (of cos and sin) as ref::RopeScaled. With partial RoPE,
  // head_dim here is the turned part's (OpParams::rope_dims).
  const float* Get(int32_t first_position, int64_t rows, int64_t head_dim, float base,
                   const float* factors = nullptr, float scale = 1.0f);
  // The same for rows at any positions (a batched step: one row per sequence).
  const float* GetRows(const int32_t* positions, int64_t rows, int64_t head_dim, float base,
                       const float* factors = nullptr, float scale = 1.0f);

  // x (rows, n_heads · head_dim) rotated in place with the pairs Get(…, rope_dims, …)
  // returned: the first rope_dims elements of each head (all of it: rope_dims = head_dim).
  static void Apply(float* x, int64_t rows, int64_t n_heads, int64_t head_dim, int64_t rope_dims,
                    const float* cos_sin);
  // The same with pair i being (x[i], x[i + rope_dims/2]) (ref::RopeHalves, ref::RopeScaled).
  static void ApplyHalves(float* x, int64_t rows, int64_t n_heads, int64_t head_dim,
                          int64_t rope_dims, const float* cos_sin);

 private:
  bool Fits(int64_t rows, int64_t head_dim) const;
  void FillRow(int64_t r, int32_t position, int64_t head_dim, float base);
  // Whether the form of the last table (head size, base, factors, scale) is this one.
  bool SameForm(int64_t rows, int64_t head_dim, float base, const float* factors,
                float scale) const;
  void KeepForm(int64_t rows, int64_t head_dim, float base, const float* factors, float scale);

  std::vector<float> table_;
  std::vector<int32_t> row_positions_;  // GetRows' key; empty when Get filled the table
  int32_t first_position_ = -1;
  int64_t rows_ = 0, head_dim_ = 0;
  float base_ = 0.0f;
  const float* factors_ = nullptr;
  float scale_ = 1.0f;
};

}  // namespace staticlm::cpu
