// Translation of a plan into dispatches: for each op, the shader variants, the byte regions
// each binding reads or writes, the push constants and the workgroup counts sized for the
// plan's largest step (shaders skip rows beyond the step's n_tokens). Plain data; init only.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/vulkan/vk_loop_budget.h"
#include "backends/vulkan/vk_pipelines.h"
#include "backends/vulkan/vk_step.h"
#include "contract/plan.h"
#include "platform/status.h"

namespace staticlm::vulkan {

// The device buffers a dispatch can bind: the plan's four, then the backend's own.
enum class Slot : uint8_t {
  kWeights = 0,
  kKvCache = 1,
  kArena = 2,
  kIo = 3,
  kRopeRows = 4,  // each step's rows' (cos, sin) per RoPE configuration (vk_step.h)
  kScratch = 5,   // attention partial results
  kDummy = 6,     // bound to unused bindings
  kCount = 7,
};

struct Region {
  Slot slot = Slot::kDummy;
  uint64_t offset = 0;
  uint64_t bytes = 0;
  const char* name = "";  // for errors
  // The unit the shader indexes this binding in (4: words; 16: uvec4s; a weight unit's bytes):
  // the binding starts a whole number of units before the tensor, and the push constant base
  // counts units.
  uint32_t unit_bytes = 4;
};

// The binding offset for a tensor at byte `offset` indexed in units of `unit` bytes: the
// largest multiple of `align` (minStorageBufferOffsetAlignment) at or below `offset` that is a
// whole number of units before it. False when there is none.
bool UnitBindingOffset(uint64_t offset, uint64_t align, uint64_t unit, uint64_t* binding_offset);

struct Dispatch {
  char shader[40] = {0};  // embedded variant name, e.g. "matmul_q4_1_m1_s0"
  Region bind[kStorageBindings];
  PushConstants pc;  // base[] is filled in when the descriptors are resolved
  uint32_t groups[3] = {1, 1, 1};
  bool barrier_before = true;  // false: independent of the previous dispatch (same op)
  // The plan ops the dispatch computes: ops [op, op + ops) of the plan (two for a pair of RoPE
  // ops done in one dispatch). An op's dispatches are consecutive.
  uint32_t op = 0;
  uint32_t ops = 1;
};

// What the translation needs besides the plan.
struct DispatchOptions {
  // 0: a column per invocation (CPU devices); 1: a column per workgroup, subgroup sums (GPUs);
  // 2: style 0 with unit loads and x shared over a subgroup of 8 (CPU devices that allow it;
  // a weight whose rows or alignment do not fit falls back to 0). Also picks the workgroup size
  // of the tiled prefill attention (styles 0 and 2: 128, style 1: 64).
  int matmul_style = 0;
  uint32_t max_group_count_x = 65535;
  uint64_t storage_offset_align = 16;  // minStorageBufferOffsetAlignment
  // maxStorageBufferRange: a matmul weight or embedding table larger than one binding can
  // hold is split over several dispatches, each binding whole rows of it.
  uint64_t max_storage_range = UINT64_MAX;
  uint32_t attention_splits_budget = 4096;  // invocations aimed at per attention split pass
  // Loop iterations one shader invocation may run in all (vk_loop_budget.h: llvmpipe's
  // 65,535); attention picks its kernel and splits to stay within 15/16 of it. 0: no limit.
  uint64_t loop_budget = kLlvmpipeLoopBudget;
  // Tests: prefill attention (rows of one sequence) always on the tiled kernel.
  bool force_tiled_attention = false;
};

// Appends the dispatches of `plan` to `out`; `scratch_bytes` grows to what its attention
// needs. `rope` must already hold every plan's configurations (RopeRows::AddPlan). Fails with
// a clear status for anything this backend does not implement.
Status TranslatePlan(const Plan& plan, const RopeRows& rope, const DispatchOptions& options,
                     std::vector<Dispatch>* out, uint64_t* scratch_bytes);

}  // namespace staticlm::vulkan
