// The memory planner: gives every arena tensor of a plan a byte offset such that tensors whose
// lifetimes overlap never share bytes, and tensors whose lifetimes do not may.
//
// A tensor lives from the first op that touches it to the last. Placement is greedy: largest
// tensors first, each at the lowest aligned offset free over its whole lifetime.
#pragma once

#include <cstdint>

#include "contract/plan.h"
#include "platform/status.h"

namespace staticlm {

struct ArenaReport {
  uint64_t arena_bytes = 0;        // what the planner chose
  uint64_t lower_bound_bytes = 0;  // most bytes live at any single op: no placement can do better
  uint64_t naive_bytes = 0;        // every tensor in its own bytes
};

// Init only (allocates working lists). Assigns offsets to every kArena tensor in `plan`, sets
// plan->buffer_bytes[kArena], and fills `report`. `alignment` is a power of two.
Status PlanArena(Plan* plan, uint64_t alignment, ArenaReport* report);

}  // namespace staticlm
