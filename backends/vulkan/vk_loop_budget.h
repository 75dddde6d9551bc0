// llvmpipe's loop budget, counted for the attention shaders. llvmpipe (lavapipe) ends every
// loop of a shader invocation once all of its loops together have run 65,535 iterations
// (gallivm's LP_MAX_TGSI_LOOP_ITERATIONS: one counter per invocation, decremented at every
// loop back-edge, never reset), and from then on each loop runs once: the results are silently
// wrong. An attention invocation walks every key of its span, so the iterations per key bound
// the context it may serve. These counts mirror attention_tiled.comp and attention_split.comp
// (change them together) and are upper bounds: a shape within them stays under the budget.
#pragma once

#include <cstdint>

namespace staticlm::vulkan {

inline constexpr uint64_t kLlvmpipeLoopBudget = 65535;

// What an attention invocation's loops depend on: the shader's head-size variant (64, 128,
// 256), q8's float-array query and output transforms, the sinks.
struct AttentionLoopShape {
  int hd_variant = 64;
  bool q8 = false;
  uint64_t sinks = 0;  // sink keys scored before the others (Sink policy)
};

// Upper bound on the loop iterations of one attention_tiled invocation whose tile attends to
// `keys` keys besides the sinks, in workgroups of `group` invocations.
uint64_t TiledLoopIterations(const AttentionLoopShape& shape, uint64_t keys, uint64_t group);

// Upper bound on the loop iterations of one attention_split invocation over `keys` keys
// (sinks included).
uint64_t SplitLoopIterations(const AttentionLoopShape& shape, uint64_t keys);

// The fewest keys-per-part splits s ≥ 1 for which ⌈keys / s⌉ keys stay within `budget`
// iterations of attention_split; 0 when none does.
uint64_t SplitsWithinBudget(const AttentionLoopShape& shape, uint64_t keys, uint64_t budget);

}  // namespace staticlm::vulkan
