// The Vulkan pipeline cache: the first Prepare writes it, the next loads it (and says so), a
// corrupt or foreign file is ignored with a note, never trusted. Prints both start times.
#include <cstdio>
#include <cstring>

#include <gtest/gtest.h>

#include "platform/clock.h"
#include "tests/support/temp_path.h"
#include "tests/vulkan_test_support.h"
#if defined(STATICLM_HAVE_VULKAN)
#include "backends/vulkan/vulkan_backend.h"
#endif

namespace staticlm::vktest {
namespace {

#if defined(STATICLM_HAVE_VULKAN)

PlanHarness MatMulPlan() {
  PlanHarness h(4);
  uint32_t x = h.Tensor(BufferId::kArena, DType::kF32, {4, 64}, "x");
  uint32_t w = h.Tensor(BufferId::kWeights, DType::kQ4_1, {48, 64}, "w");
  uint32_t y = h.Tensor(BufferId::kArena, DType::kF32, {4, 48}, "y");
  h.AddOp(OpKind::kMatMul, {x, w}, {y}, OpParams{});
  h.Allocate();
  return h;
}

struct Start {
  Status status;
  bool loaded = false;
  std::string note;
  double seconds = 0.0;
};

Start PrepareWithCache(const std::string& path) {
  PlanHarness h = MatMulPlan();
  BackendOptions options;
  std::snprintf(options.pipeline_cache_path, sizeof(options.pipeline_cache_path), "%s",
                path.c_str());
  vulkan::VulkanBackend vk(options);
  const Plan* plans[1] = {&h.plan};
  double t0 = NowSeconds();
  Start s;
  s.status = vk.Prepare(plans, 1, h.Binding());
  s.seconds = NowSeconds() - t0;
  s.loaded = vk.pipeline_cache_loaded();
  s.note = vk.pipeline_cache_note();
  return s;
}

TEST(VulkanPipelineCacheTest, SavedThenLoadedCorruptIgnored) {
  std::string path = test::TempPath("pipelines.bin");
  std::remove(path.c_str());
  Start first = PrepareWithCache(path);
  if (!first.status.ok() && std::strstr(first.status.message(), "no Vulkan") != nullptr) {
    GTEST_SKIP() << first.status.message();
  }
  ASSERT_TRUE(first.status.ok()) << first.status.message();
  EXPECT_FALSE(first.loaded);
  FILE* f = std::fopen(path.c_str(), "rb");
  ASSERT_NE(f, nullptr) << "the first Prepare should write " << path;
  std::fclose(f);

  Start second = PrepareWithCache(path);
  ASSERT_TRUE(second.status.ok()) << second.status.message();
  EXPECT_TRUE(second.loaded);
  std::printf("Prepare without cache %.3f s, with cache %.3f s\n", first.seconds, second.seconds);

  // A file whose header names another device is ignored, with a note, and rewritten.
  f = std::fopen(path.c_str(), "r+b");
  ASSERT_NE(f, nullptr);
  std::fseek(f, 8, SEEK_SET);
  const uint32_t foreign_vendor = 0xdeadbeef;
  std::fwrite(&foreign_vendor, 4, 1, f);
  std::fclose(f);
  Start foreign = PrepareWithCache(path);
  ASSERT_TRUE(foreign.status.ok()) << foreign.status.message();
  EXPECT_FALSE(foreign.loaded);
  EXPECT_NE(foreign.note.find("ignored"), std::string::npos) << foreign.note;

  // Truncated garbage: ignored too.
  f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fwrite("garbage", 1, 7, f);
  std::fclose(f);
  Start corrupt = PrepareWithCache(path);
  ASSERT_TRUE(corrupt.status.ok()) << corrupt.status.message();
  EXPECT_FALSE(corrupt.loaded);
  std::printf("%s\n", corrupt.note.c_str());
  std::remove(path.c_str());
}

#else
TEST(VulkanPipelineCacheTest, Skipped) {
  GTEST_SKIP() << "built without Vulkan (STATICLM_VULKAN=OFF)";
}
#endif

}  // namespace
}  // namespace staticlm::vktest
