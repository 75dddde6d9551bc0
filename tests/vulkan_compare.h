// For the Vulkan kernel tests: one-op plans run on the CPU reference backend (the oracle) and on
// the Vulkan backend with the validation layer on, their results compared, and the shader
// variants a plan translates to. Only for builds with the Vulkan backend.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/vulkan/vk_dispatch.h"
#include "backends/vulkan/vulkan_backend.h"
#include "tests/vulkan_test_support.h"

namespace staticlm::vktest {

// Runs on the reference CPU backend and on Vulkan (validation on, matmul `style`, and a
// largest storage binding of `max_binding` bytes unless 0), returning both results; skips the
// test when there is no device.
struct Pair {
  RunResult cpu, gpu;
  bool skipped = false;
};

inline Pair RunBoth(const PlanHarness& h, const std::vector<StepParams>& steps, int style = 0,
                    uint64_t max_binding = 0, bool force_tiled = false,
                    uint32_t splits_budget = 0) {
  Pair p;
  BackendOptions options;
  options.reference_kernels = true;
  cpu::CpuBackend cpu_backend(options);
  p.cpu = RunPlan(cpu_backend, h, steps);
  EXPECT_TRUE(p.cpu.status.ok()) << p.cpu.status.message();
  vulkan::VulkanTestOptions test;
  test.validation = true;
  test.force_matmul_style = style;
  test.max_storage_binding = max_binding;
  test.force_tiled_attention = force_tiled;
  test.attention_splits_budget = splits_budget;
  vulkan::VulkanBackend vk(BackendOptions{}, test);
  p.gpu = RunPlan(vk, h, steps);
  if (!p.gpu.status.ok() && p.gpu.status.code() == StatusCode::kUnsupported &&
      std::strstr(p.gpu.status.message(), "no Vulkan") != nullptr) {
    p.skipped = true;
    return p;
  }
  EXPECT_TRUE(p.gpu.status.ok()) << p.gpu.status.message();
  EXPECT_EQ(vk.validation_messages(), 0u) << "validation layer messages (see stderr)";
  if (vk.matmul_style() != style) std::printf("note: matmul style %d unsupported here\n", style);
  return p;
}

inline void ExpectClose(const std::vector<float>& want, const std::vector<float>& got,
                        float tolerance, const char* what) {
  ASSERT_EQ(want.size(), got.size());
  float scale = 0.0f;
  for (float w : want) scale = std::max(scale, std::fabs(w));
  int bad = 0;
  for (size_t i = 0; i < want.size() && bad < 5; ++i) {
    if (!(std::fabs(want[i] - got[i]) <= tolerance * std::max(1.0f, scale))) {
      ADD_FAILURE() << what << "[" << i << "]: reference " << want[i] << ", vulkan " << got[i];
      ++bad;
    }
  }
}

#define RUN_OR_SKIP(var, ...)                          \
  Pair var = RunBoth(__VA_ARGS__);                     \
  if (var.skipped) GTEST_SKIP() << "no Vulkan device"; \
  ASSERT_TRUE(var.gpu.status.ok() && var.cpu.status.ok())

// The dispatches of `h`'s plan translated with `style` (and lavapipe's 16-byte storage offset
// alignment), the translation's status in *status.
inline std::vector<vulkan::Dispatch> TranslateWithStyle(const PlanHarness& h, int style,
                                                        Status* status, uint64_t max_binding = 0,
                                                        bool force_tiled = false) {
  vulkan::RopeRows rope;
  rope.AddPlan(h.plan, h.bytes[static_cast<int>(BufferId::kWeights)].data());
  std::vector<vulkan::Dispatch> dispatches;
  uint64_t scratch = 0;
  vulkan::DispatchOptions options;
  options.matmul_style = style;
  options.storage_offset_align = 16;
  options.force_tiled_attention = force_tiled;
  if (max_binding != 0) options.max_storage_range = max_binding;
  *status = vulkan::TranslatePlan(h.plan, rope, options, &dispatches, &scratch);
  return dispatches;
}

// The shaders of the dispatches whose names start with `prefix`, in order.
inline std::vector<std::string> TranslatedShaders(const PlanHarness& h, int style,
                                                  const char* prefix, uint64_t max_binding = 0,
                                                  bool force_tiled = false) {
  Status s;
  std::vector<vulkan::Dispatch> dispatches =
      TranslateWithStyle(h, style, &s, max_binding, force_tiled);
  EXPECT_TRUE(s.ok()) << s.message();
  std::vector<std::string> names;
  for (const vulkan::Dispatch& d : dispatches) {
    if (std::strncmp(d.shader, prefix, std::strlen(prefix)) == 0) names.push_back(d.shader);
  }
  return names;
}

// The first of them, or "".
inline std::string FirstShader(const PlanHarness& h, int style, const char* prefix,
                               bool force_tiled = false) {
  std::vector<std::string> names = TranslatedShaders(h, style, prefix, 0, force_tiled);
  return names.empty() ? std::string() : names[0];
}

}  // namespace staticlm::vktest
