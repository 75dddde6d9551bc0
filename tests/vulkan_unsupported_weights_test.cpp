// The Vulkan backend has no shaders for the Q5 types and the K-quants: a plan whose matmul or
// embedding reads such a weight must fail Prepare with kUnsupported and a one-line message
// naming the tensor and its type, never run. Checked on the plan translation (no device needed)
// and through VulkanBackend::Prepare where a device exists (skips otherwise).
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "tests/vulkan_test_support.h"
#if defined(STATICLM_HAVE_VULKAN)
#include "backends/vulkan/vk_dispatch.h"
#include "backends/vulkan/vulkan_backend.h"
#endif

namespace staticlm::vktest {
namespace {

#if defined(STATICLM_HAVE_VULKAN)

const DType kNoShaderTypes[] = {DType::kQ5_0, DType::kQ5_1, DType::kQ4_K, DType::kQ5_K,
                                DType::kQ6_K};

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

std::string Expected(DType type, bool embed) {
  return std::string("Vulkan: no ") + (embed ? "embedding" : "matmul") + " kernel for " +
         (embed ? "token_embd.weight" : "blk.0.ffn_down.weight") + " (" + DTypeName(type) + ")";
}

TEST(VulkanUnsupportedWeightsTest, TranslationRefusesWithTensorAndType) {
  for (DType type : kNoShaderTypes) {
    for (bool embed : {false, true}) {
      SCOPED_TRACE(std::string(DTypeName(type)) + (embed ? " embed" : " matmul"));
      PlanHarness h = OneOpPlan(type, embed);
      vulkan::RopeRows rope;
      rope.AddPlan(h.plan);
      std::vector<vulkan::Dispatch> dispatches;
      uint64_t scratch = 0;
      for (int style : {0, 1, 2}) {
        vulkan::DispatchOptions options;
        options.matmul_style = style;
        Status s = vulkan::TranslatePlan(h.plan, rope, options, &dispatches, &scratch);
        EXPECT_EQ(s.code(), StatusCode::kUnsupported);
        EXPECT_EQ(s.message(), Expected(type, embed)) << "style " << style;
      }
    }
  }
}

TEST(VulkanUnsupportedWeightsTest, PrepareRefusesWithTensorAndType) {
  for (DType type : {DType::kQ4_K, DType::kQ5_0, DType::kQ6_K}) {
    for (bool embed : {false, true}) {
      SCOPED_TRACE(std::string(DTypeName(type)) + (embed ? " embed" : " matmul"));
      PlanHarness h = OneOpPlan(type, embed);
      vulkan::VulkanTestOptions test;
      test.validation = true;
      vulkan::VulkanBackend vk(BackendOptions{}, test);
      RunResult r = RunPlan(vk, h, {});
      if (r.status.code() == StatusCode::kUnsupported &&
          std::strstr(r.status.message(), "no Vulkan") != nullptr) {
        GTEST_SKIP() << r.status.message();
      }
      EXPECT_EQ(r.status.code(), StatusCode::kUnsupported);
      EXPECT_EQ(r.status.message(), Expected(type, embed));
      EXPECT_EQ(vk.validation_messages(), 0u) << "validation layer messages (see stderr)";
    }
  }
}

#else

TEST(VulkanUnsupportedWeightsTest, BuiltWithoutVulkan) {
  GTEST_SKIP() << "built without the Vulkan backend";
}

#endif

}  // namespace
}  // namespace staticlm::vktest
