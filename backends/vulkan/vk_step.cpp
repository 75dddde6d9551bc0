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

bool RopeRows::Same(const Entry& e, const Op& op) {
  const OpParams& p = op.params;
  const bool sink_query = op.kind == OpKind::kAttention;
  if (e.sink_query != sink_query || e.params.head_dim != p.head_dim ||
      e.params.rope_base != p.rope_base) {
    return false;
  }
  return !sink_query || (e.params.sinks == p.sinks && e.params.window == p.window);
}

void RopeRows::AddPlan(const Plan& plan) {
  max_rows_ = std::max(max_rows_, plan.limits.prefill_chunk);
  for (const Op& op : plan.ops) {
    const bool sink = op.kind == OpKind::kAttention && op.params.cache_policy == CachePolicy::kSink;
    if ((op.kind != OpKind::kRope && !sink) || Find(op) != nullptr) continue;
    Entry e;
    e.sink_query = sink;
    e.params = op.params;
    e.inv_freq = inv_freq_.size();
    const int64_t hd = op.params.head_dim;
    for (int64_t i = 0; i < hd / 2; ++i) {
      inv_freq_.push_back(std::pow(static_cast<double>(op.params.rope_base),
                                   -2.0 * static_cast<double>(i) / static_cast<double>(hd)));
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

const RopeRows::Entry* RopeRows::Find(const Op& op) const {
  for (const Entry& e : entries_) {
    if (Same(e, op)) return &e;
  }
  return nullptr;
}

uint64_t RopeRows::EntryBytes(const Entry& e) const {
  // head_dim / 2 pairs of two floats a row.
  return static_cast<uint64_t>(max_rows_) * static_cast<uint64_t>(e.params.head_dim / 2) * 2 *
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
    const int64_t pairs = e.params.head_dim / 2;
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
        std::memcpy(dst + e.offset + static_cast<uint64_t>((r * pairs + i) * 2) * sizeof(float),
                    pair, sizeof(pair));
      }
    }
  }
}

}  // namespace staticlm::vulkan
