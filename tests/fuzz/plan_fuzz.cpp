// libFuzzer target: the plan-file loader (runtime/plan/plan_file.h) and what trusts its result.
// A file that parses has each plan validated against buffers of the sizes it declares
// (contract/plan_validation.h), as a backend's Prepare does; a plan that passes and asks for
// little memory is then run one decode step and one full prefill chunk on the CPU reference
// kernels, over buffers of exactly those sizes: a validated plan, however hostile, must not
// make a kernel read or write outside its buffers (AddressSanitizer would say so).
//
// Input: byte 0 holds repair bits (fuzz_inputs.h): with kRepairChecksums the header's payload
// size and checksum are fixed before parsing, so mutations reach the records behind them. The
// rest is the file. Seeds: plan files of the tiny model (make_fuzz_seeds) and their prefixes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "backends/backend.h"
#include "backends/backend_registry.h"
#include "contract/plan_validation.h"
#include "platform/aligned_buffer.h"
#include "runtime/plan/plan_cost.h"
#include "runtime/plan/plan_file.h"
#include "tests/fuzz/fuzz_inputs.h"

namespace {

using namespace staticlm;

// Plans asking for more memory or work than this are only validated, not run (time, not
// safety: a validated plan of any size is as safe to run).
constexpr uint64_t kMaxRunBytes = uint64_t{8} << 20;
constexpr uint64_t kMaxRunFlops = uint64_t{20} << 20;

void RunPlans(const PlanFileContents& c, const BufferBinding& sizes) {
  AlignedBuffer buffers[kBufferCount];
  BufferBinding binding = sizes;
  for (int b = 0; b < kBufferCount; ++b) {
    if (!buffers[b].Allocate(sizes.bytes[b] > 0 ? sizes.bytes[b] : 1, 64, "fuzz buffer").ok()) {
      return;
    }
    binding.data[b] = buffers[b].data();
  }
  BackendOptions options;
  options.reference_kernels = true;
  std::unique_ptr<Backend> backend;
  if (!CreateBackend("cpu", options, &backend).ok()) return;
  const Plan* plans[2] = {&c.plans[0], &c.plans[1]};
  if (!backend->Prepare(plans, c.n_plans, binding).ok()) return;
  for (int i = 0; i < c.n_plans; ++i) {
    const PlanLimits& l = c.plans[i].limits;
    int32_t rows[kMaxBatch] = {};
    int32_t positions[kMaxBatch] = {};
    for (int32_t r = 0; r < kMaxBatch; ++r) rows[r] = r % l.max_batch;
    StepParams step;
    step.n_tokens = l.rows_are_sequences ? l.max_batch : l.prefill_chunk;
    step.row_sequences = l.rows_are_sequences ? rows : nullptr;
    step.row_positions = l.rows_are_sequences ? positions : nullptr;
    if (EstimateStepCost(c.plans[i], step.n_tokens, 0).flops > kMaxRunFlops) continue;
    if (CheckStep(c.plans[i], step).ok()) (void)backend->Execute(i, step);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::vector<uint8_t> file(data + 1, data + size);
  if (data[0] & fuzz::kRepairChecksums) fuzz::RepairPlanFile(&file);
  auto contents = std::make_unique<PlanFileContents>();
  if (!ParsePlanFile(file.data(), file.size(), contents.get()).ok()) return 0;
  // Both plans share the buffers (decode and prefill), sized for the larger of each. The
  // weights are the model's data section, which the plan does not size: as far as its
  // weight tensors reach.
  BufferBinding sizes;
  uint64_t total = 0;
  for (int i = 0; i < contents->n_plans; ++i) {
    for (const TensorRegion& t : contents->plans[i].tensors) {
      if (t.buffer != BufferId::kWeights || !TensorShapeInRange(t) || t.offset > kMaxRunBytes) {
        continue;
      }
      uint64_t& weights = sizes.bytes[static_cast<int>(BufferId::kWeights)];
      weights = std::max(weights, t.offset + t.bytes());
    }
  }
  for (int b = 0; b < kBufferCount; ++b) {
    for (int i = 0; i < contents->n_plans; ++i) {
      sizes.bytes[b] = std::max(sizes.bytes[b], contents->plans[i].buffer_bytes[b]);
    }
    total += sizes.bytes[b] < kMaxRunBytes ? sizes.bytes[b] : kMaxRunBytes;
    // Validation only checks that a buffer is bound; RunPlans binds real memory.
    alignas(64) static uint8_t unread;
    sizes.data[b] = &unread;
  }
  for (int i = 0; i < contents->n_plans; ++i) {
    if (!ValidatePlan(contents->plans[i], sizes).ok()) return 0;
  }
  if (total < kMaxRunBytes) RunPlans(*contents, sizes);
  return 0;
}
