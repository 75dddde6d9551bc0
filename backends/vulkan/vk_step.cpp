#include "backends/vulkan/vk_step.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "contract/kv_policy.h"

namespace staticlm::vulkan {

void WriteStepBlock(const Plan& plan, const StepParams& step, StepBlock* out) {
  out->n_tokens = step.n_tokens;
  out->position = step.position;
  out->sequence = step.sequence;
  out->rows_are_sequences = plan.limits.rows_are_sequences ? 1 : 0;
  if (!plan.limits.rows_are_sequences) return;
  // CheckStep: n_tokens ≤ prefill_chunk = max_batch ≤ kMaxBatch, both arrays present.
  const int32_t rows = std::min(step.n_tokens, kMaxBatch);
  for (int32_t r = 0; r < rows; ++r) {
    out->rows[r][0] = step.row_sequences[r];
    out->rows[r][1] = step.row_positions[r];
  }
}

namespace {

// The weights-buffer offset of a rope op's frequency factors, or of a sink attention's (the
// query's turn back to its cache position), or RopeRows::kNoFactors.
uint64_t FactorsOffset(const Plan& plan, const Op& op) {
  const int factors =
      op.kind == OpKind::kRope ? (op.n_inputs == 1 ? 0 : -1) : AttentionFactorsInput(op);
  return factors >= 0 ? plan.tensors[op.inputs[factors]].offset : RopeRows::kNoFactors;
}

}  // namespace

bool RopeRows::Same(const Entry& e, const Plan& plan, const Op& op) {
  const OpParams& p = op.params;
  const bool sink_query = op.kind == OpKind::kAttention;
  if (e.sink_query != sink_query || e.params.head_dim != p.head_dim ||
      RopeDims(e.params) != RopeDims(p) || e.params.rope_base != p.rope_base ||
      e.params.rope_scale != p.rope_scale || e.factors_offset != FactorsOffset(plan, op)) {
    return false;
  }
  return !sink_query || (e.params.sinks == p.sinks && e.params.window == p.window);
}

void RopeRows::AddPlan(const Plan& plan, const uint8_t* weights) {
  max_rows_ = std::max(max_rows_, plan.limits.prefill_chunk);
  for (const Op& op : plan.ops) {
    const bool sink = op.kind == OpKind::kAttention && op.params.cache_policy == CachePolicy::kSink;
    if ((op.kind != OpKind::kRope && !sink) || Find(plan, op) != nullptr) continue;
    Entry e;
    e.sink_query = sink;
    e.params = op.params;
    e.inv_freq = inv_freq_.size();
    e.factors_offset = FactorsOffset(plan, op);
    const int64_t rope_dims = RopeDims(op.params);  // partial RoPE: a head of rope_dims
    for (int64_t i = 0; i < rope_dims / 2; ++i) {
      double inv_freq = std::pow(static_cast<double>(op.params.rope_base),
                                 -2.0 * static_cast<double>(i) / static_cast<double>(rope_dims));
      if (e.factors_offset != kNoFactors) {  // as ref::RopeScaled: divided in double
        float factor = 0.0f;
        std::memcpy(&factor, weights + e.factors_offset + 4 * static_cast<uint64_t>(i), 4);
        inv_freq /= static_cast<double>(factor);
      }
      inv_freq_.push_back(inv_freq);
    }
    entries_.push_back(e);
  }
  // Offsets follow the largest step seen so far.
  uint64_t offset = 0;
  for (Entry& e : entries_) {
    e.offset = offset;
    offset += EntryBytes(e);
  }
}

const RopeRows::Entry* RopeRows::Find(const Plan& plan, const Op& op) const {
  for (const Entry& e : entries_) {
    if (Same(e, plan, op)) return &e;
  }
  return nullptr;
}

uint64_t RopeRows::EntryBytes(const Entry& e) const {
  // RopeDims / 2 pairs of two floats a row.
  return static_cast<uint64_t>(max_rows_) * static_cast<uint64_t>(RopeDims(e.params) / 2) * 2 *
         sizeof(float);
}

uint64_t RopeRows::bytes() const {
  uint64_t total = 0;
  for (const Entry& e : entries_) total += EntryBytes(e);
  return std::max<uint64_t>(total, 16);
}

void RopeRows::Write(const Plan& plan, const StepParams& step, uint8_t* dst) const {
  const bool by_row = plan.limits.rows_are_sequences;
  const int64_t rows = std::min(step.n_tokens, max_rows_);
  for (const Entry& e : entries_) {
    const int64_t pairs = RopeDims(e.params) / 2;
    const double* inv_freq = &inv_freq_[e.inv_freq];
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t position = by_row ? int64_t{step.row_positions[r]} : int64_t{step.position} + r;
      // As ref::Rope (the row's position) or ref::RotateQuery (delta = cache_position −
      // position): the angle in double, cos and sin rounded to f32.
      const int64_t angle_of =
          e.sink_query ? Attended(e.params, position).cache_position - position : position;
      float pair[2];
      for (int64_t i = 0; i < pairs; ++i) {
        const double angle = static_cast<double>(angle_of) * inv_freq[i];
        pair[0] = static_cast<float>(std::cos(angle));
        pair[1] = static_cast<float>(std::sin(angle));
        if (e.params.rope_scale != 1.0f) {  // as ref::RopeScaled: scaled after rounding
          pair[0] *= e.params.rope_scale;
          pair[1] *= e.params.rope_scale;
        }
        std::memcpy(dst + e.offset + static_cast<uint64_t>((r * pairs + i) * 2) * sizeof(float),
                    pair, sizeof(pair));
      }
    }
  }
}

}  // namespace staticlm::vulkan
