// A 64-bit checksum of a plan's contents (limits, buffer sizes, tensors, ops), binding a saved
// session to the plan whose cache layout and arithmetic produced it. FNV-1a over each field in
// a fixed order (never over struct padding), so equal plans hash equally in every build.
#pragma once

#include <cstdint>

#include "contract/plan.h"

namespace staticlm {

// Any phase; never allocates. Combine plans by passing the previous result as `seed`.
uint64_t HashPlan(const Plan& plan, uint64_t seed = 0xcbf29ce484222325ull);

}  // namespace staticlm
