// Fusion passes: named rewrites of a plan's op list, applied at plan time before the memory
// planner, each switchable off (staticlm plan --no-fuse NAME) so its effect can be measured.
// Every pass yields the same logits as the unfused plan (tested); on the CPU they are bitwise
// the same, because a fused op performs the same float operations in the same order.
//
//   norm      an RMSNorm whose output only feeds the next matmul is folded into its input
//   qkv       the Q, K and V projections of one input become one op
//   gate_up   the gate and up projections and their SiLU-multiply become one op
//   residual  a residual add is folded into the output of the matmul before it
#pragma once

#include <cstdint>

#include "contract/plan.h"
#include "platform/status.h"

namespace staticlm {

enum FusionPass : uint32_t {
  kFuseNorm = 1u << 0,
  kFuseQkv = 1u << 1,
  kFuseGateUp = 1u << 2,
  kFuseResidual = 1u << 3,
};
constexpr uint32_t kAllFusions = kFuseNorm | kFuseQkv | kFuseGateUp | kFuseResidual;

// The pass called `name` ("norm", "qkv", "gate_up", "residual", or "all"); 0 if unknown.
uint32_t FusionPassByName(const char* name);
// A comma-separated list of the passes in `mask`, written into `out`.
void DescribeFusions(uint32_t mask, char* out, size_t capacity);

// Init only. Applies the passes in `enabled`, in the order qkv, gate_up, residual, norm.
void ApplyFusionPasses(uint32_t enabled, Plan* plan);

}  // namespace staticlm
