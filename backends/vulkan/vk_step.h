// What the host writes before each submit, into small host-visible buffers sized at init:
//  - the step's uniform block (shaders/common.glsl): token count, the first position and
//    sequence of a one-sequence step, or each row's sequence and position in a batched step;
//  - the RoPE rows: for each row of the step and each RoPE configuration the plans use, the
//    (cos, sin) pairs of that row's rotation, computed in double exactly as the CPU backend
//    computes them (backends/cpu/ref_rope.cpp; RotateQuery in ref_kv_load.cpp for the sinks'
//    query), so positions have no bound and rotations are bitwise the CPU's.
// Run-phase calls write into memory given at init: no allocation, work bounded by the plan's
// largest step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "contract/plan.h"

namespace staticlm::vulkan {

// shaders/common.glsl's StepBlock (std140), word for word.
struct StepBlock {
  int32_t n_tokens = 0;
  int32_t position = 0;  // of row 0 (a one-sequence step)
  int32_t sequence = 0;  // a one-sequence step's sequence
  int32_t rows_are_sequences = 0;
  int32_t rows[kMaxBatch][4] = {};  // batched steps: [r][0] sequence, [r][1] position
};
static_assert(sizeof(StepBlock) == 16 + 16 * kMaxBatch, "must match shaders/common.glsl");

// Run phase: `step` (already checked against `plan`) into `out`, which may be mapped memory.
// Only the rows of a batched step are written.
void WriteStepBlock(const Plan& plan, const StepParams& step, StepBlock* out);

// The RoPE rows buffer: one entry per configuration, each (max_rows, RopeDims / 2) × (cos, sin)
// in f32 (RopeDims: the head, or its turned part with partial RoPE). A rope op's entry holds the
// rotation to each row's position; a Sink-cache attention's entry the rotation of each row's query
// to its position inside the cache (by cache_position − position ≤ 0), with which the sinks are
// scored.
class RopeRows {
 public:
  struct Entry {
    bool sink_query = false;  // false: a rope op's rotation
    OpParams params;      // head_dim, rope_dims, rope_base, rope_scale; for sink_query the cache
                          // policy
    uint64_t offset = 0;  // bytes into the buffer
    size_t inv_freq = 0;  // index of its first inverse frequency in inv_freq_
    // Where the op's frequency factors are in the weights buffer (kNoFactors: none); they are
    // folded into the inverse frequencies.
    uint64_t factors_offset = kNoFactors;
  };
  static constexpr uint64_t kNoFactors = ~uint64_t{0};

  // Init only: adds the configurations of `plan` not yet known and grows the rows to its
  // largest step (prefill_chunk). `weights` is the weights buffer's host copy (the factors are
  // read from it).
  void AddPlan(const Plan& plan, const uint8_t* weights);
  // The entry serving `op` of `plan` (a kRope op, or a kAttention op over a Sink cache);
  // nullptr if none.
  const Entry* Find(const Plan& plan, const Op& op) const;
  uint64_t EntryBytes(const Entry& e) const;
  uint64_t bytes() const;  // the whole buffer; at least 16 so it can always be created

  // Run phase: every entry's rows for `step` (checked against `plan`) into `dst`, bytes()
  // long.
  void Write(const Plan& plan, const StepParams& step, uint8_t* dst) const;

 private:
  static bool Same(const Entry& e, const Plan& plan, const Op& op);

  std::vector<Entry> entries_;
  std::vector<double> inv_freq_;  // base^(−2i / head_dim), as the CPU kernels compute it
  int32_t max_rows_ = 0;
};

}  // namespace staticlm::vulkan
