// The Vulkan backend against the CPU backend on the real model, through the C API
// (tests/support/backend_parity.h, which says why the tolerances are what they are): logits
// after a prefill that spans several chunks and at every decode step, and a greedy
// continuation token for token, with the static f16 cache and with the other cache modes the
// backend implements (sliding window, sinks, q8, q4), and with ring caches run well past
// max_context (positions have no bound on either backend). Also the errors: an impossible
// device index fails clearly with "vulkan" and falls back to the CPU with "auto".
#include <cstdio>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "staticlm/staticlm.h"
#include "tests/support/backend_parity.h"
#include "tests/support/context_helpers.h"
#include "tests/support/sanitizer_build.h"

namespace {

// The sanitizer build (there for memory errors) runs each quantized cache once, windowed: the
// host code is the same for the static variant, and the CPU reference run that calibrates the
// bound takes minutes there. It also decodes fewer steps (12 instead of 24, and 40 instead of
// 150 past max_context): every step after the first takes the same host path, and the windows
// still wrap and the positions still pass max_context. The Release build runs them all.
using staticlm::test::kSanitizerBuild;
using Context = staticlm::test::ContextPtr;
using CacheMode = staticlm::test::ParityMode;

// The static f16 cache, with this build's number of steps.
CacheMode Base() {
  CacheMode mode;
  mode.steps = kSanitizerBuild ? 12 : 24;
  return mode;
}

bool NoVulkan(const std::string& error) {
  return error.find("no Vulkan") != std::string::npos;
}

void CompareGreedy(const CacheMode& mode) {
  staticlm::test::CompareGreedyWithCpu("vulkan", STATICLM_DEFAULT_MODEL, mode, NoVulkan);
}

Context Create(const char* backend, int device, std::string* error) {
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.max_context = 256;
  limits.prefill_chunk = 16;
  limits.backend = backend;
  limits.device = device;
  return staticlm::test::TryCreateContext(STATICLM_DEFAULT_MODEL, limits, error);
}

TEST(VulkanParityTest, GreedyContinuationMatchesCpu) {
  CompareGreedy(Base());
}

// A window of 24 over a 31-token prompt and 24 steps (12 in the sanitizer build): the ring of
// 24 + 16 − 1 slots wraps.
TEST(VulkanParityTest, SlidingWindowMatchesCpu) {
  CacheMode mode = Base();
  mode.window = 24;
  CompareGreedy(mode);
}

// Four sinks kept while the rest of the window slides: the sink scores use the query rotated
// to its position inside the cache.
TEST(VulkanParityTest, SinksMatchCpu) {
  CacheMode mode = Base();
  mode.window = 24;
  mode.sinks = 4;
  CompareGreedy(mode);
}

// Sinks on a model with RoPE frequency factors (the small Llama 3.2-style family model:
// rope_freqs.weight): the sinks' scores take the query turned back by the keys' factored
// frequencies. Past max_context, as below.
TEST(VulkanParityTest, SinksWithRopeFactorsMatchCpu) {
  CacheMode mode = Base();
  mode.window = 24;
  mode.sinks = 4;
  mode.max_context = 64;
  mode.steps = kSanitizerBuild ? 40 : 100;
  mode.continue_past_ties = true;
  staticlm::test::CompareGreedyWithCpu("vulkan", STATICLM_FAMILY_MODELS_DIR "/llama/llama-f16.gguf",
                                       mode, NoVulkan);
}

// Sinks on a model whose RoPE rotates halves (the small Qwen2 family model; every Hugging Face
// folder): the sinks' query turn pairs element i with i + head_dim / 2, in the float caches'
// element-wise load and in q8's whole-row rotation before its Hadamard transform.
TEST(VulkanParityTest, SinksOnHalvesRopeMatchCpu) {
  for (staticlm_kv_type kv : {STATICLM_KV_F16, STATICLM_KV_Q8}) {
    SCOPED_TRACE(kv == STATICLM_KV_F16 ? "f16 cache" : "q8 cache");
    CacheMode mode = Base();
    mode.window = 24;
    mode.sinks = 4;
    mode.kv = kv;
    mode.max_context = 64;
    mode.steps = kSanitizerBuild ? 40 : 100;
    mode.continue_past_ties = true;
    staticlm::test::CompareGreedyWithCpu(
        "vulkan", STATICLM_FAMILY_MODELS_DIR "/qwen2/qwen2-f16.gguf", mode, NoVulkan);
  }
}

// Positions well past max_context: a context of 64 with a window of 24 over a 31-token prompt,
// 150 greedy tokens (to position 181; 40, to position 71, in the slower sanitizer build); the RoPE
// angles are each step's rows', not a table.
TEST(VulkanParityTest, SlidingWindowPastMaxContextMatchesCpu) {
  CacheMode mode = Base();
  mode.window = 24;
  mode.max_context = 64;
  mode.steps = kSanitizerBuild ? 40 : 150;  // past max_context either way
  mode.continue_past_ties = true;
  CompareGreedy(mode);
}

// The same with four sinks: their scores use each step's query rotation to its in-cache
// position, far from the sinks' own positions.
TEST(VulkanParityTest, SinksPastMaxContextMatchCpu) {
  CacheMode mode = Base();
  mode.window = 24;
  mode.sinks = 4;
  mode.max_context = 64;
  mode.steps = kSanitizerBuild ? 40 : 150;  // past max_context either way
  mode.continue_past_ties = true;
  CompareGreedy(mode);
}

// The q8 cache (Hadamard-rotated int8 rows), static and windowed.
TEST(VulkanParityTest, Q8CacheMatchesCpu) {
  CacheMode mode = Base();
  mode.kv = STATICLM_KV_Q8;
  if (!kSanitizerBuild) CompareGreedy(mode);
  mode.window = 24;
  CompareGreedy(mode);
}

// The q4 cache (KIVI: 4-bit groups and full-precision rings), static and windowed.
TEST(VulkanParityTest, Q4CacheMatchesCpu) {
  CacheMode mode = Base();
  mode.kv = STATICLM_KV_Q4;
  if (!kSanitizerBuild) CompareGreedy(mode);
  mode.window = 24;
  CompareGreedy(mode);
}

TEST(VulkanParityTest, ImpossibleDeviceFailsClearlyAndAutoFallsBack) {
  std::string error;
  Context gpu = Create("vulkan", 99, &error);
  EXPECT_EQ(gpu, nullptr);
  std::printf("vulkan, device 99: %s\n", error.c_str());
  EXPECT_FALSE(error.empty());
  Context any = Create("auto", 99, &error);
  ASSERT_NE(any, nullptr) << error;
  EXPECT_STREQ(staticlm_backend_name(any.get()), "cpu");
  std::printf("auto, device 99: %s\n", staticlm_init_notes(any.get()));
  EXPECT_NE(std::strstr(staticlm_init_notes(any.get()), "vulkan: "), nullptr);
  int32_t token = 42;
  EXPECT_EQ(staticlm_prefill(any.get(), &token, 1), STATICLM_OK);
}

}  // namespace
