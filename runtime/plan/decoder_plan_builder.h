// Builds the plan of a Llama decoder from its hyperparameters, its weight tensors and the
// user's limits. The plan's tensors are regions: weights at their offsets in the GGUF data
// section, per-layer K/V caches, arena activations (placed by the memory planner), and io.
#pragma once

#include "contract/plan.h"
#include "platform/status.h"
#include "runtime/model/model_config.h"
#include "runtime/plan/memory_planner.h"

namespace staticlm {
namespace gguf {
class GgufFile;
}

// Bytes every region in the KV cache, arena and io buffers is aligned to.
constexpr uint64_t kPlanAlignment = 64;

// Init only. Checks every weight tensor's presence, shape and type (errors name the tensor),
// emits the op list, applies the fusion passes in `fusions` (runtime/plan/fusion_passes.h) and
// places all tensors. `arena` receives the planner's report.
Status BuildDecoderPlan(const gguf::GgufFile& file, const ModelConfig& config,
                        const PlanLimits& limits, uint32_t fusions, Plan* plan, ArenaReport* arena);

// The largest KV cache, arena and io buffers a Llama plan for (config, limits) can need — what
// BuildDecoderPlan produces for the KV cache and io, and twice one layer's activations with no
// sharing for the arena. A plan file asking for more is refused before anything is allocated.
uint64_t DecoderBufferBound(const ModelConfig& config, const PlanLimits& limits, BufferId buffer);

// The cache fields of layer `layer`'s kKvStore and kAttention ops (policy, quantization, slots)
// under `limits`: the one place a layer's cache size is decided.
OpParams LayerCacheParams(const PlanLimits& limits, int layer);

// How many times BuildDecoderPlan has run in this process: lets a test prove that loading a plan
// file builds nothing.
uint64_t PlanBuildCount();

}  // namespace staticlm
