// Weight types on the Vulkan backend, checked on the plan translation (no device needed):
// every type a plan may give a weight matrix or an embedding table (IsWeightMatrixDType)
// translates, in every matmul style, fused form and row tile, to shader variants that are
// embedded in the library; and a type without shaders is refused with kUnsupported and a
// one-line message naming the tensor and its type, never run. (Plan validation refuses such a
// type before Prepare; the translation does not rely on it.)
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "tests/vulkan_test_support.h"
#if defined(STATICLM_HAVE_VULKAN)
#include "backends/vulkan/spirv_blobs.h"
#include "backends/vulkan/vk_dispatch.h"
#include "tests/vulkan_compare.h"
#endif

namespace staticlm::vktest {
namespace {

#if defined(STATICLM_HAVE_VULKAN)

// A plan of one product y = x · wᵀ with w of `type`, or one embedding from a table of `type`.
PlanHarness OneOpPlan(DType type, bool embed) {
  const int64_t rows = 8, width = 256, chunk = 2;
  PlanHarness h(chunk);
  if (embed) {
    uint32_t table = h.Tensor(BufferId::kWeights, type, {rows, width}, "token_embd.weight");
    uint32_t out = h.Tensor(BufferId::kArena, DType::kF32, {chunk, width}, "x");
    h.AddOp(OpKind::kEmbed, {table, h.plan.tokens_tensor}, {out}, OpParams{});
  } else {
    uint32_t x = h.Tensor(BufferId::kArena, DType::kF32, {chunk, width}, "x");
    uint32_t w = h.Tensor(BufferId::kWeights, type, {rows, width}, "blk.0.ffn_down.weight");
    uint32_t y = h.Tensor(BufferId::kArena, DType::kF32, {chunk, rows}, "y");
    h.AddOp(OpKind::kMatMul, {x, w}, {y}, OpParams{});
  }
  h.Allocate();
  return h;
}

// I32, the one GGUF type a weight cannot have.
TEST(VulkanUnsupportedWeightsTest, TranslationRefusesWithTensorAndType) {
  for (bool embed : {false, true}) {
    SCOPED_TRACE(embed ? "embed" : "matmul");
    PlanHarness h = OneOpPlan(DType::kI32, embed);
    for (int style : {0, 1, 2}) {
      Status s;
      TranslateWithStyle(h, style, &s);
      EXPECT_EQ(s.code(), StatusCode::kUnsupported);
      EXPECT_EQ(s.message(), std::string("Vulkan: no ") + (embed ? "embedding" : "matmul") +
                                 " kernel for " +
                                 (embed ? "token_embd.weight" : "blk.0.ffn_down.weight") + " (I32)")
          << "style " << style;
    }
  }
}

// Every weight type, with the embedding and the three fused forms of the product (plain,
// gate/up + SiLU, residual accumulation), decode and prefill row tiles, weights on a 16-byte
// boundary (units fit) or 4 bytes past one (some fall back), in every style: the translation
// succeeds and names only embedded variants — a variant missing from shaders/shaders.cmake
// would otherwise surface only at Prepare on a device.
TEST(VulkanUnsupportedWeightsTest, EveryWeightTypeTranslatesToEmbeddedShaders) {
  int weight_types = 0;
  for (uint32_t id = 0; id <= 30; ++id) {
    if (!IsKnownDType(id) || !IsWeightMatrixDType(static_cast<DType>(id))) continue;
    const DType type = static_cast<DType>(id);
    ++weight_types;
    for (int32_t chunk : {1, 11}) {
      for (bool aligned : {false, true}) {
        const int64_t n_in = 512, n_out = 20;
        PlanHarness h(chunk);
        uint32_t x = h.Tensor(BufferId::kArena, DType::kF32, {chunk, n_in}, "x");
        h.Tensor(BufferId::kWeights, DType::kF32, {64}, "room");
        uint32_t w[4];
        for (uint32_t& t : w) {
          t = h.Tensor(BufferId::kWeights, type, {n_out, n_in}, "w");
          if (aligned) {
            TensorRegion& r = h.plan.tensors[t];
            r.offset += 12;
            h.plan.buffer_bytes[static_cast<int>(BufferId::kWeights)] = r.offset + r.bytes();
          }
        }
        uint32_t y[5];
        for (uint32_t& t : y) t = h.Tensor(BufferId::kArena, DType::kF32, {chunk, n_out}, "y");
        uint32_t e = h.Tensor(BufferId::kArena, DType::kF32, {chunk, n_in}, "e");
        h.AddOp(OpKind::kEmbed, {w[0], h.plan.tokens_tensor}, {e}, OpParams{});
        h.AddOp(OpKind::kMatMul, {x, w[0]}, {y[0]}, OpParams{});
        OpParams gate_up;
        gate_up.n_weights = 2;
        gate_up.silu_mul = true;
        h.AddOp(OpKind::kMatMul, {x, w[1], w[2]}, {y[1], y[2]}, gate_up);
        OpParams residual;
        residual.accumulate = true;
        h.AddOp(OpKind::kMatMul, {x, w[3]}, {y[3], y[4]}, residual);
        for (int style : {0, 1, 2}) {
          SCOPED_TRACE(std::string(DTypeName(type)) + " chunk " + std::to_string(chunk) +
                       " style " + std::to_string(style) + (aligned ? " aligned" : ""));
          Status s;
          std::vector<vulkan::Dispatch> dispatches = TranslateWithStyle(h, style, &s);
          ASSERT_TRUE(s.ok()) << s.message();
          EXPECT_EQ(dispatches.size(), 4u);
          for (const vulkan::Dispatch& d : dispatches) {
            EXPECT_NE(vulkan::FindSpirv(d.shader), nullptr) << d.shader;
          }
        }
      }
    }
  }
  EXPECT_EQ(weight_types, 11);
}

#else

TEST(VulkanUnsupportedWeightsTest, BuiltWithoutVulkan) {
  GTEST_SKIP() << "built without the Vulkan backend";
}

#endif

}  // namespace
}  // namespace staticlm::vktest
