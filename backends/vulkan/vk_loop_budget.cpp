#include "backends/vulkan/vk_loop_budget.h"

namespace staticlm::vulkan {
namespace {

uint64_t CeilDiv(uint64_t a, uint64_t b) {
  return (a + b - 1) / b;
}

// A loop of n trips runs n + 1 iterations in llvmpipe: the last one finds every invocation
// gone (break) and only then leaves, at the back-edge, where the counter is decremented.
constexpr uint64_t kExit = 1;

uint64_t Log2(uint64_t n) {
  uint64_t bits = 0;
  while ((uint64_t{1} << bits) < n) ++bits;
  return bits;
}

// The loops outside the keys: the query loaded (twice with sinks), the output zeroed and
// stored; q8 adds float-array copies, the sinks' rotation and Hadamard transforms
// (hadamard.glsl: about n · log2 n / 2 + n each), counted here at n · (2 + log2 n) for each
// of the three. Generous on purpose: a few thousand iterations, against 65,535.
uint64_t FixedIterations(const AttentionLoopShape& shape, uint64_t head_loop) {
  uint64_t hd = static_cast<uint64_t>(shape.hd_variant);
  uint64_t plain = 4 * head_loop + 8;
  return shape.q8 ? plain + 3 * hd * (2 + Log2(hd)) : plain;
}

}  // namespace

uint64_t TiledLoopIterations(const AttentionLoopShape& shape, uint64_t keys, uint64_t group) {
  uint64_t hd = static_cast<uint64_t>(shape.hd_variant);
  uint64_t hd4 = hd / 4;
  // A head-wide loop: unrolled up to 128 wide (counted as a one-trip loop in case one
  // remains), else HD_STEP = 8 vec4s per iteration.
  uint64_t head_loop = (hd > 128 ? hd4 / 8 : 1) + kExit;
  uint64_t tile = 2048 / hd;  // TILE: keys staged at once
  // A tile: the tile loop's iteration, stage()'s ⌈TILE · HD4 / WG⌉ and attend()'s exit, and
  // two more than these loops account for, measured: at head size 256 the wrong rows began
  // between 3,232 and 3,264 keys with workgroups of 128 (3,255 counted here) and between 3,168
  // and 3,184 with 64 (3,176), vulkan_kernels_test with the tiled kernel forced. A key:
  // attend()'s iteration, its dot product and its accumulation.
  uint64_t per_tile = 1 + CeilDiv(tile * hd4, group) + kExit + kExit + 2;
  uint64_t tiles = CeilDiv(keys, tile) + CeilDiv(shape.sinks, tile);
  uint64_t per_key = 1 + 2 * head_loop;
  return FixedIterations(shape, head_loop) + tiles * per_tile + (keys + shape.sinks) * per_key;
}

uint64_t SplitLoopIterations(const AttentionLoopShape& shape, uint64_t keys) {
  // Loops over a head's vec4s one at a time (dot_query, the accumulation).
  uint64_t head_loop = static_cast<uint64_t>(shape.hd_variant) / 4 + kExit;
  return FixedIterations(shape, head_loop) + keys * (1 + 2 * head_loop);
}

uint64_t SplitsWithinBudget(const AttentionLoopShape& shape, uint64_t keys, uint64_t budget) {
  uint64_t fixed = SplitLoopIterations(shape, 0);
  uint64_t per_key = SplitLoopIterations(shape, 1) - fixed;
  if (budget <= fixed + per_key) return 0;
  uint64_t keys_per_split = (budget - fixed) / per_key;
  return keys == 0 ? 1 : CeilDiv(keys, keys_per_split);
}

}  // namespace staticlm::vulkan
