// The pipeline cache through the C API on the real model: staticlm_limits.pipeline_cache_path
// reaches the Vulkan backend, the first start writes the file and says so in the init notes,
// the second loads it (the note names the bytes loaded), and a corrupt file is ignored with a
// note while the context still works. With a plan file and no cache path, the cache goes to
// "<plan>.vkcache". Times are not asserted (speed figures come from `staticlm bench`).
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "staticlm/staticlm.h"
#include "tests/support/context_helpers.h"
#include "tests/support/temp_path.h"

namespace {

using Context = staticlm::test::ContextPtr;

staticlm_limits SmallLimits() {
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.max_context = 64;
  limits.prefill_chunk = 8;
  limits.backend = "vulkan";
  return limits;
}

Context Create(const staticlm_limits& limits, std::string* error_out) {
  return staticlm::test::TryCreateContext(STATICLM_DEFAULT_MODEL, limits, error_out);
}

bool FileExists(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  std::fclose(f);
  return true;
}

// One decode step works and gives finite logits.
void ExpectDecodes(staticlm_context* ctx) {
  ASSERT_EQ(staticlm_decode(ctx, 1), STATICLM_OK);
  const float* logits = staticlm_logits(ctx);
  ASSERT_NE(logits, nullptr);
  EXPECT_TRUE(logits[0] == logits[0]);
}

TEST(VulkanEnginePipelineCacheTest, WrittenLoadedAndCorruptIgnored) {
  const std::string path = staticlm::test::TempPath("engine.vkcache");
  std::remove(path.c_str());
  staticlm_limits limits = SmallLimits();
  limits.pipeline_cache_path = path.c_str();
  std::string error;
  {
    Context first = Create(limits, &error);
    if (first == nullptr) GTEST_SKIP() << "no usable Vulkan device: " << error;
    EXPECT_TRUE(FileExists(path)) << "the first start should write " << path;
    std::string notes = staticlm_init_notes(first.get());
    EXPECT_NE(notes.find("wrote"), std::string::npos) << notes;
    EXPECT_EQ(notes.find("loaded"), std::string::npos) << notes;
  }
  {
    Context second = Create(limits, &error);
    ASSERT_NE(second, nullptr) << error;
    std::string notes = staticlm_init_notes(second.get());
    EXPECT_NE(notes.find("pipeline cache: loaded"), std::string::npos) << notes;
    ExpectDecodes(second.get());
  }
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fwrite("not a pipeline cache, just garbage bytes", 1, 40, f);
  std::fclose(f);
  {
    Context corrupt = Create(limits, &error);
    ASSERT_NE(corrupt, nullptr) << error;
    std::string notes = staticlm_init_notes(corrupt.get());
    EXPECT_NE(notes.find("ignored"), std::string::npos) << notes;
    EXPECT_EQ(notes.find("pipeline cache: loaded"), std::string::npos) << notes;
    ExpectDecodes(corrupt.get());
  }
  std::remove(path.c_str());
}

TEST(VulkanEnginePipelineCacheTest, DefaultsBesideThePlanFile) {
  const std::string plan = staticlm::test::TempPath("engine_cache.plan");
  const std::string cache = plan + ".vkcache";
  std::remove(cache.c_str());
  staticlm_limits limits = SmallLimits();
  char error[512] = {0};
  ASSERT_EQ(staticlm_save_plan(STATICLM_DEFAULT_MODEL, &limits, plan.c_str(), error, sizeof(error)),
            STATICLM_OK)
      << error;
  limits.plan_path = plan.c_str();
  std::string create_error;
  Context ctx = Create(limits, &create_error);
  if (ctx == nullptr) GTEST_SKIP() << "no usable Vulkan device: " << create_error;
  EXPECT_TRUE(FileExists(cache)) << "expected the cache beside the plan: " << cache;
  std::remove(cache.c_str());
  std::remove(plan.c_str());
}

}  // namespace
