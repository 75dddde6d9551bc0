// What one step of a plan reads, writes and computes, derived from the plan itself: the
// figures `staticlm plan --print` shows and the benchmark divides by (bytes per decode step →
// the memory-bandwidth bound on tokens/s).
#pragma once

#include <cstdint>

#include "contract/plan.h"

namespace staticlm {

struct StepCost {
  uint64_t weight_bytes = 0;      // weight bytes read (a matmul reads its whole matrix)
  uint64_t kv_cache_bytes = 0;    // cache bytes read by attention and written by stores
  uint64_t activation_bytes = 0;  // arena and io bytes read and written
  uint64_t bytes_read = 0;        // all bytes read (weights, cache, activations)
  uint64_t bytes_written = 0;     // all bytes written
  uint64_t flops = 0;             // multiply-adds count as two
  uint64_t total_bytes() const { return bytes_read + bytes_written; }
  void Add(const StepCost& o);
};

// The cost of one op in a step of `n_tokens` tokens whose first is at cache `position`.
StepCost EstimateOpCost(const Plan& plan, const Op& op, int32_t n_tokens, int32_t position);

// The sum over the plan's ops.
StepCost EstimateStepCost(const Plan& plan, int32_t n_tokens, int32_t position);

}  // namespace staticlm
