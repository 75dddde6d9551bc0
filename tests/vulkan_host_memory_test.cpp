// The Vulkan backend's weights imported from the model's file mapping
// (VK_EXT_external_memory_host) instead of copied into a device buffer. Through the C API the
// engine's Vulkan backend imports them on a device that offers the extension (lavapipe does)
// and still matches the CPU greedy, token for token. A backend of our own over the engine's
// decode plan and mapping then runs the same tokens twice, imported and with import refused
// (VulkanTestOptions::no_host_import): the fallback uploads, and both give bit-identical
// logits (same device, same kernels, same bytes); the upload grows the process's memory by
// about the weights' size more than the import does. The validation layer (with
// synchronization validation) reports nothing about the imported buffer.
//
// Memory: peak RSS (VmHWM) never falls within a process, so the two runs are compared by how
// much each one's Prepare grows the resident memory that no file backs (RssAnon + RssShmem):
// the upload's copy is anonymous or shared memory, the imported weights are the model file's
// page cache. VmRSS would also count the file's pages, which the kernel may drop or bring back
// at any moment under the memory pressure of a busy machine (CI runs other stages beside).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "platform/process_stats.h"
#include "runtime/capi/capi_context.h"
#include "staticlm/staticlm.h"
#include "tests/support/context_helpers.h"
#if defined(STATICLM_HAVE_VULKAN)
#include "backends/vulkan/vulkan_backend.h"
#endif

#if defined(STATICLM_SANITIZE)
// ASan's quarantine keeps freed memory resident (256 MiB by default) to catch use after free.
// Every Prepare here builds lavapipe's pipelines, whose LLVM compiles free tens of MiB: held in
// the quarantine, that garbage would count as the import's RSS growth and hide the difference
// the test measures. This binary alone runs without it; the other Vulkan tests keep it.
extern "C" const char* __asan_default_options() {
  return "quarantine_size_mb=0";
}
#endif

namespace {

#if defined(STATICLM_HAVE_VULKAN)

constexpr float kLogitTolerance = 0.1f;  // as vulkan_parity_test (see "Tolerance" there)
constexpr uint64_t kMiB = 1024 * 1024;

using Context = staticlm::test::ContextPtr;

Context Create(const char* backend, std::string* error_out) {
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.max_context = 128;
  limits.prefill_chunk = 16;
  limits.backend = backend;
  return staticlm::test::TryCreateContext(STATICLM_DEFAULT_MODEL, limits, error_out);
}

using staticlm::test::Argmax;
using staticlm::test::Logits;
using staticlm::test::TopTwoGap;

std::vector<int32_t> Prompt(staticlm_context* ctx) {
  const char* text = "The history of the Roman Empire spans more than a thousand years, from";
  std::vector<int32_t> tokens(64);
  size_t n = 0;
  EXPECT_EQ(staticlm_tokenize(ctx, text, std::strlen(text), 0, tokens.data(), tokens.size(), &n),
            STATICLM_OK);
  tokens.resize(n);
  return tokens;
}

staticlm::vulkan::VulkanBackend* VulkanOf(staticlm_context* ctx) {
  return dynamic_cast<staticlm::vulkan::VulkanBackend*>(ctx->engine.backend());
}

// Skips unless the model and a Vulkan device offering host import are here (a device that
// offers it must import: a refusal there fails); `gpu` is then the engine on Vulkan.
#define REQUIRE_VULKAN(gpu)                                                         \
  if (!staticlm::test::HaveDefaultModel())                                          \
    GTEST_SKIP() << "no model at " << STATICLM_DEFAULT_MODEL;                       \
  std::string error_;                                                               \
  Context gpu = Create("vulkan", &error_);                                          \
  if (gpu == nullptr && error_.find("no Vulkan") != std::string::npos) {            \
    GTEST_SKIP() << "no usable Vulkan device: " << error_;                          \
  }                                                                                 \
  ASSERT_NE(gpu, nullptr) << error_;                                                \
  if (std::strstr(VulkanOf(gpu.get())->description(), "lacks VK_EXT") != nullptr) { \
    GTEST_SKIP() << "this device does not import host memory: "                     \
                 << VulkanOf(gpu.get())->description();                             \
  }

TEST(VulkanHostMemoryTest, EngineImportsWeightsAndMatchesCpuGreedy) {
  REQUIRE_VULKAN(gpu);
  EXPECT_TRUE(VulkanOf(gpu.get())->weights_imported()) << VulkanOf(gpu.get())->description();
  EXPECT_NE(std::strstr(VulkanOf(gpu.get())->description(), "weights: imported from host memory"),
            nullptr)
      << VulkanOf(gpu.get())->description();
  std::string error;
  Context cpu = Create("cpu", &error);
  ASSERT_NE(cpu, nullptr) << error;
  std::vector<int32_t> tokens = Prompt(cpu.get());
  ASSERT_GT(tokens.size(), 8u);
  for (staticlm_context* c : {cpu.get(), gpu.get()}) {
    ASSERT_EQ(staticlm_prefill(c, tokens.data(), tokens.size()), STATICLM_OK);
  }
  int matched = 0;
  for (int step = 0; step < 16; ++step) {
    std::vector<float> want = Logits(cpu.get()), got = Logits(gpu.get());
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_NEAR(got[i], want[i], kLogitTolerance) << "step " << step << ", logit " << i;
    }
    int32_t token = Argmax(want);
    if (Argmax(got) != token) {
      ASSERT_LT(TopTwoGap(want), kLogitTolerance) << "step " << step;
      break;  // a near tie: summation order may pick either
    }
    ++matched;
    for (staticlm_context* c : {cpu.get(), gpu.get()}) {
      ASSERT_EQ(staticlm_decode(c, token), STATICLM_OK);
    }
  }
  EXPECT_GE(matched, 8);
}

// A Vulkan backend of our own over the engine's decode plan, reading the engine's weight
// mapping; its other host buffers are ours.
struct OwnRun {
  bool imported = false;
  std::string description;
  uint64_t rss_growth = 0;                 // of Prepare's non-file resident memory, in bytes
  std::vector<std::vector<float>> logits;  // one row per step
};

OwnRun RunOwnBackend(staticlm::Engine& engine, const std::vector<int32_t>& tokens, bool no_import,
                     bool validation) {
  using namespace staticlm;
  OwnRun run;
  const Plan& plan = engine.plan_for(1);
  std::vector<uint8_t> kv(plan.buffer_bytes[int(BufferId::kKvCache)]);
  std::vector<uint8_t> arena(plan.buffer_bytes[int(BufferId::kArena)]);
  std::vector<uint8_t> io(plan.buffer_bytes[int(BufferId::kIo)]);
  BufferBinding binding;
  binding.data[int(BufferId::kWeights)] = const_cast<uint8_t*>(engine.file().tensor_data());
  binding.bytes[int(BufferId::kWeights)] = engine.file().tensor_data_bytes();
  binding.data[int(BufferId::kKvCache)] = kv.data();
  binding.bytes[int(BufferId::kKvCache)] = kv.size();
  binding.data[int(BufferId::kArena)] = arena.data();
  binding.bytes[int(BufferId::kArena)] = arena.size();
  binding.data[int(BufferId::kIo)] = io.data();
  binding.bytes[int(BufferId::kIo)] = io.size();
  vulkan::VulkanTestOptions test;
  test.no_host_import = no_import;
  test.validation = validation;
  const uint64_t rss_before = NonFileRssBytes();
  vulkan::VulkanBackend vk(BackendOptions{}, test);
  const Plan* plans[1] = {&plan};
  Status s = vk.Prepare(plans, 1, binding);
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok()) return run;
  const uint64_t rss_after = NonFileRssBytes();
  run.rss_growth = rss_after > rss_before ? rss_after - rss_before : 0;
  run.imported = vk.weights_imported();
  run.description = vk.description();
  const TensorRegion& in = plan.tensors[plan.tokens_tensor];
  const TensorRegion& out = plan.tensors[plan.logits_tensor];
  const int32_t vocab = engine.config().vocab_size;
  for (size_t step = 0; step < tokens.size(); ++step) {
    std::memcpy(io.data() + in.offset, &tokens[step], sizeof(int32_t));
    s = vk.Execute(0, StepParams{1, int32_t(step)});
    EXPECT_TRUE(s.ok()) << s.message();
    if (!s.ok()) return run;
    const float* l = reinterpret_cast<const float*>(io.data() + out.offset);
    run.logits.emplace_back(l, l + vocab);
  }
  EXPECT_EQ(vk.validation_messages(), 0u);
  return run;
}

TEST(VulkanHostMemoryTest, RefusedImportFallsBackToUploadWithSameLogits) {
  REQUIRE_VULKAN(gpu);
  std::vector<int32_t> tokens = Prompt(gpu.get());
  ASSERT_GT(tokens.size(), 8u);
  staticlm::Engine& engine = gpu->engine;
  OwnRun imported = RunOwnBackend(engine, tokens, false, false);
  OwnRun uploaded = RunOwnBackend(engine, tokens, true, false);
  // Apart from the RSS runs: the layer's own memory would blur the comparison.
  OwnRun validated = RunOwnBackend(engine, tokens, false, true);
  EXPECT_TRUE(validated.imported) << validated.description;
  EXPECT_TRUE(imported.imported) << imported.description;
  EXPECT_FALSE(uploaded.imported) << uploaded.description;
  EXPECT_NE(imported.description.find("weights: imported from host memory"), std::string::npos)
      << imported.description;
  EXPECT_NE(uploaded.description.find("weights: uploaded (import disabled by the test)"),
            std::string::npos)
      << uploaded.description;
  ASSERT_EQ(imported.logits.size(), tokens.size());
  ASSERT_EQ(uploaded.logits.size(), tokens.size());
  for (size_t step = 0; step < tokens.size(); ++step) {
    EXPECT_EQ(imported.logits[step], uploaded.logits[step]) << "step " << step;
    if (step < validated.logits.size()) {
      EXPECT_EQ(imported.logits[step], validated.logits[step]) << "step " << step;
    }
  }
  // The logits are the model's: the engine's (imported) run on the same prompt agrees.
  ASSERT_EQ(staticlm_prefill(gpu.get(), tokens.data(), tokens.size()), STATICLM_OK);
  std::vector<float> engine_logits = Logits(gpu.get());
  for (size_t i = 0; i < engine_logits.size(); ++i) {
    ASSERT_NEAR(imported.logits.back()[i], engine_logits[i], kLogitTolerance) << "logit " << i;
  }

  const uint64_t weights = engine.file().tensor_data_bytes();
  std::printf(
      "weights %.1f MiB; Prepare grew non-file RSS by %.1f MiB imported, %.1f MiB uploaded\n",
      double(weights) / kMiB, double(imported.rss_growth) / kMiB,
      double(uploaded.rss_growth) / kMiB);
  if (staticlm::NonFileRssBytes() == 0) GTEST_SKIP() << "no /proc/self/status here";
  ASSERT_GT(weights, 64 * kMiB) << "the default model's weights should be large enough to see";
  EXPECT_GE(uploaded.rss_growth, imported.rss_growth + 50 * kMiB);
}

#else

TEST(VulkanHostMemoryTest, Skipped) {
  GTEST_SKIP() << "built without the Vulkan backend";
}

#endif

}  // namespace
