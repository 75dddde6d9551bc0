// Human- and machine-readable reports of plans: the op table of `staticlm plan --print` and
// the JSON summary of `staticlm plan --json`.
#pragma once

#include <cstddef>

#include "contract/plan.h"
#include "runtime/plan/memory_planner.h"

namespace staticlm {

// A named plan with its arena report and the step size its costs are computed for.
struct ReportedPlan {
  const char* name;  // "decode" or "prefill"
  const Plan* plan;
  ArenaReport arena;
  int32_t n_tokens;  // tokens per step for the costs (1 for decode, the chunk for prefill)
};

// Writes the op table (index, kernel, output, inputs, output region, bytes read and written,
// FLOPs) and per-step totals of each plan. Returns the bytes the whole text needs; writes at
// most capacity − 1 of them plus a NUL.
size_t WritePlanTable(const ReportedPlan* plans, int n_plans, char* out, size_t capacity);

// Writes one JSON object: for each plan, its name mapping to arena_bytes, lower_bound_bytes,
// naive_bytes, bytes_read_per_step, bytes_written_per_step, weight_bytes_per_step,
// flops_per_step, ops, tensors and tokens_per_step. Same return convention as above.
size_t WritePlanJson(const ReportedPlan* plans, int n_plans, char* out, size_t capacity);

}  // namespace staticlm
