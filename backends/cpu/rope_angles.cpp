#include "backends/cpu/rope_angles.h"

#include <algorithm>
#include <cmath>

namespace staticlm::cpu {

Status RopeAngles::Init(int64_t max_rows, int64_t max_head_dim) {
  if (max_rows <= 0 || max_head_dim <= 0) {
    return Status::Error(StatusCode::kInvalidArgument, "RoPE table needs rows and a head size");
  }
  table_.assign(static_cast<size_t>(max_rows * (max_head_dim / 2) * 2), 0.0f);
  row_positions_.reserve(static_cast<size_t>(max_rows));
  first_position_ = -1;
  return Status::Ok();
}

bool RopeAngles::Fits(int64_t rows, int64_t head_dim) const {
  const int64_t half = head_dim / 2;
  return rows > 0 && half > 0 && static_cast<uint64_t>(rows * half * 2) <= table_.size();
}

void RopeAngles::FillRow(int64_t r, int32_t position, int64_t head_dim, float base) {
  const int64_t half = head_dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    // As ref::Rope (ref::RopeScaled with factors or a scale): the angle in double, then cos and
    // sin rounded to f32 (and scaled in f32).
    double inv_freq = std::pow(static_cast<double>(base),
                               -2.0 * static_cast<double>(i) / static_cast<double>(head_dim));
    if (factors_ != nullptr) inv_freq /= static_cast<double>(factors_[i]);
    float* pair = &table_[static_cast<size_t>((r * half + i) * 2)];
    pair[0] = static_cast<float>(std::cos(static_cast<double>(position) * inv_freq));
    pair[1] = static_cast<float>(std::sin(static_cast<double>(position) * inv_freq));
    if (scale_ != 1.0f) {
      pair[0] *= scale_;
      pair[1] *= scale_;
    }
  }
}

bool RopeAngles::SameForm(int64_t rows, int64_t head_dim, float base, const float* factors,
                          float scale) const {
  return rows == rows_ && head_dim == head_dim_ && base == base_ && factors == factors_ &&
         scale == scale_;
}

void RopeAngles::KeepForm(int64_t rows, int64_t head_dim, float base, const float* factors,
                          float scale) {
  rows_ = rows;
  head_dim_ = head_dim;
  base_ = base;
  factors_ = factors;
  scale_ = scale;
}

const float* RopeAngles::Get(int32_t first_position, int64_t rows, int64_t head_dim, float base,
                             const float* factors, float scale) {
  if (row_positions_.empty() && first_position == first_position_ &&
      SameForm(rows, head_dim, base, factors, scale)) {
    return table_.data();
  }
  if (!Fits(rows, head_dim)) return nullptr;
  KeepForm(rows, head_dim, base, factors, scale);
  for (int64_t r = 0; r < rows; ++r) {
    FillRow(r, static_cast<int32_t>(first_position + r), head_dim, base);
  }
  row_positions_.clear();
  first_position_ = first_position;
  return table_.data();
}

const float* RopeAngles::GetRows(const int32_t* positions, int64_t rows, int64_t head_dim,
                                 float base, const float* factors, float scale) {
  if (!row_positions_.empty() && SameForm(rows, head_dim, base, factors, scale) &&
      std::equal(positions, positions + rows, row_positions_.begin())) {
    return table_.data();
  }
  if (!Fits(rows, head_dim) || static_cast<size_t>(rows) > row_positions_.capacity()) {
    return nullptr;
  }
  KeepForm(rows, head_dim, base, factors, scale);
  for (int64_t r = 0; r < rows; ++r) FillRow(r, positions[r], head_dim, base);
  row_positions_.assign(positions, positions + rows);  // within the capacity Init reserved
  first_position_ = -1;
  return table_.data();
}

void RopeAngles::Apply(float* x, int64_t rows, int64_t n_heads, int64_t head_dim, int64_t rope_dims,
                       const float* cos_sin) {
  const int64_t half = rope_dims / 2;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t h = 0; h < n_heads; ++h) {
      float* head = x + (r * n_heads + h) * head_dim;
      const float* cs = cos_sin + r * half * 2;
      for (int64_t i = 0; i < half; ++i) {
        float c = cs[2 * i], s = cs[2 * i + 1];
        float x0 = head[2 * i], x1 = head[2 * i + 1];
        head[2 * i] = x0 * c - x1 * s;
        head[2 * i + 1] = x0 * s + x1 * c;
      }
    }
  }
}

void RopeAngles::ApplyHalves(float* x, int64_t rows, int64_t n_heads, int64_t head_dim,
                             int64_t rope_dims, const float* cos_sin) {
  const int64_t half = rope_dims / 2;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t h = 0; h < n_heads; ++h) {
      float* head = x + (r * n_heads + h) * head_dim;
      const float* cs = cos_sin + r * half * 2;
      for (int64_t i = 0; i < half; ++i) {
        float c = cs[2 * i], s = cs[2 * i + 1];
        float x0 = head[i], x1 = head[i + half];
        head[i] = x0 * c - x1 * s;
        head[i + half] = x0 * s + x1 * c;
      }
    }
  }
}

}  // namespace staticlm::cpu
