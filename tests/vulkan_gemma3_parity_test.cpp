// The Vulkan backend runs the gemma3 architecture as the CPU backend does: the small random
// Gemma 3 of gemma3_architecture_test (tests/golden/gemma3_tiny.gguf: one KV head, head size 32,
// GeGLU, per-head q/k norms, post-attention and post-FFN norms, scaled embeddings, tied head, five
// sliding layers with a 12-token window and RoPE base 1e4, one global layer with base 1e6),
// through the C API on both backends with the same limits. The CPU runs its reference kernels
// (the oracle).
//
// - Logits at every position of a 48-token prompt, prefilled in chunks of 5 then one token at a
//   time, so the sliding layers' rings wrap several times: against the CPU, and against
//   transformers' logits (tests/golden/gemma3_tiny.txt) with gemma3_architecture_test's bound.
// - The whole prompt as one chunk (the tiled prefill kernel over a ring as long as the chunk).
// - A greedy continuation to the end of the context, far past the window, token for token.
//
// Tolerance, relative to the largest logit (7.8 here). f32 weights, the same arithmetic; only
// the order of float additions differs (reductions in a tree on the device). With the f32
// cache the logits agreed to 7e-7 of their size when this was written (the test prints the
// largest difference): kF32CacheTolerance = 2e-5 leaves room for other devices and none for a
// mistake — a wrong RoPE pair, base, norm or window moves these logits by more than 1 (the
// golden script checks that for the window and the base). The f16 cache rounds k and v to f16,
// and a last-bit difference in k can round to the neighbouring f16 (2^-11 relative): 7e-5
// measured, kF16CacheTolerance = 1e-3.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/staticlm.h"
#include "tests/support/context_helpers.h"
#include "tests/support/golden_files.h"

namespace {

constexpr const char* kModel = STATICLM_GOLDEN_DIR "/gemma3_tiny.gguf";
constexpr float kF32CacheTolerance = 2e-5f;
constexpr float kF16CacheTolerance = 1e-3f;
constexpr float kTransformersTolerance = 2e-3f;  // as gemma3_architecture_test

using staticlm::test::Argmax;
using staticlm::test::ContextPtr;
using staticlm::test::Logits;
using staticlm::test::TopTwoGap;

struct Backends {
  ContextPtr cpu, gpu;
  bool skipped = false;
  std::string skip_reason;
};

// A CPU (reference kernels) and a Vulkan context with the same limits; skipped when there is
// no Vulkan device or build.
Backends Create(int32_t chunk, staticlm_kv_type kv, int32_t sinks = 0, int32_t window = 0) {
  Backends b;
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.max_context = 64;
  limits.prefill_chunk = chunk;
  limits.kv_type = kv;
  limits.sinks = sinks;
  limits.window = window;
  limits.backend = "vulkan";
  std::string error;
  b.gpu = staticlm::test::TryCreateContext(kModel, limits, &error);
  if (b.gpu == nullptr && error.find("no Vulkan") != std::string::npos) {
    b.skipped = true;
    b.skip_reason = error;
    return b;
  }
  EXPECT_NE(b.gpu, nullptr) << error;
  limits.backend = "cpu";
  limits.reference_kernels = 1;
  b.cpu = staticlm::test::CreateContext(kModel, limits);
  if (b.gpu != nullptr) {
    EXPECT_STREQ(staticlm_backend_name(b.gpu.get()), "vulkan");
  }
  return b;
}

#define CREATE_OR_SKIP(var, ...)                    \
  Backends var = Create(__VA_ARGS__);               \
  if (var.skipped) GTEST_SKIP() << var.skip_reason; \
  ASSERT_TRUE(var.cpu != nullptr && var.gpu != nullptr)

float MaxDifference(const std::vector<float>& a, const std::vector<float>& b) {
  float d = 0.0f;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
  return d;
}

float MaxAbs(const std::vector<float>& a) {
  float m = 0.0f;
  for (float v : a) m = std::max(m, std::fabs(v));
  return m;
}

class VulkanGemma3ParityTest : public ::testing::TestWithParam<staticlm_kv_type> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(
        staticlm::test::ReadWindowLogitsGolden(STATICLM_GOLDEN_DIR "/gemma3_tiny.txt", &golden_));
    ASSERT_GT(golden_.tokens.size(), size_t(golden_.window) + 20);
  }
  float Tolerance() const {
    return GetParam() == STATICLM_KV_F32 ? kF32CacheTolerance : kF16CacheTolerance;
  }
  // Checks the two backends' logits at `position` against each other (relative to the logits'
  // size) and, with the f32 cache, against transformers'; returns the difference.
  float Compare(const Backends& b, size_t position) {
    std::vector<float> want = Logits(b.cpu.get()), got = Logits(b.gpu.get());
    const float diff = MaxDifference(want, got);
    EXPECT_LE(diff, Tolerance() * std::max(1.0f, MaxAbs(want))) << "position " << position;
    if (GetParam() == STATICLM_KV_F32 && position >= size_t(golden_.window)) {
      EXPECT_LT(MaxDifference(golden_.logits[position - size_t(golden_.window)], got),
                kTransformersTolerance)
          << "position " << position;
    }
    return diff;
  }
  staticlm::test::WindowLogitsGolden golden_;
};

// 20 tokens in chunks of 5 (rings of 12 + 5 − 1 slots wrap), then one token at a time.
TEST_P(VulkanGemma3ParityTest, LogitsAtEveryPositionPastTheWindow) {
  CREATE_OR_SKIP(b, 5, GetParam());
  const size_t first = 20;
  for (staticlm_context* c : {b.cpu.get(), b.gpu.get()}) {
    ASSERT_EQ(staticlm_prefill(c, golden_.tokens.data(), first), STATICLM_OK);
  }
  float worst = Compare(b, first - 1);
  for (size_t p = first; p < golden_.tokens.size(); ++p) {
    for (staticlm_context* c : {b.cpu.get(), b.gpu.get()}) {
      ASSERT_EQ(staticlm_decode(c, golden_.tokens[p]), STATICLM_OK) << "position " << p;
    }
    worst = std::max(worst, Compare(b, p));
  }
  std::printf("gemma3 tiny, vulkan vs cpu reference: largest logit difference %.2e\n", worst);
}

// The whole prompt in one chunk of 48: tiled attention over rings of 12 + 48 − 1 slots.
TEST_P(VulkanGemma3ParityTest, OneChunkPrefill) {
  const int32_t n = static_cast<int32_t>(golden_.tokens.size());
  CREATE_OR_SKIP(b, n, GetParam());
  for (staticlm_context* c : {b.cpu.get(), b.gpu.get()}) {
    ASSERT_EQ(staticlm_prefill(c, golden_.tokens.data(), golden_.tokens.size()), STATICLM_OK);
  }
  std::printf("gemma3 tiny, one chunk: largest logit difference %.2e\n",
              Compare(b, golden_.tokens.size() - 1));
}

// Eight prompt tokens, then greedy tokens to the end of the 64-token context (more than four
// windows): the Vulkan backend picks the CPU's token every step. A different pick is accepted
// only at a near tie (the CPU's top-2 gap below the logit tolerance); both then go on with the
// CPU's token, so that every step is still compared.
TEST_P(VulkanGemma3ParityTest, GreedyContinuationPastTheWindow) {
  CREATE_OR_SKIP(b, 5, GetParam());
  const size_t prompt = 8, context = 64;
  for (staticlm_context* c : {b.cpu.get(), b.gpu.get()}) {
    ASSERT_EQ(staticlm_prefill(c, golden_.tokens.data(), prompt), STATICLM_OK);
  }
  int matched = 0, ties = 0;
  for (size_t position = prompt; position < context; ++position) {
    std::vector<float> want = Logits(b.cpu.get()), got = Logits(b.gpu.get());
    const int32_t token = Argmax(want);
    if (Argmax(got) == token) {
      ++matched;
    } else {
      ASSERT_LT(TopTwoGap(want), Tolerance() * std::max(1.0f, MaxAbs(want)))
          << "position " << position << ": cpu " << token << ", vulkan " << Argmax(got);
      ++ties;
    }
    for (staticlm_context* c : {b.cpu.get(), b.gpu.get()}) {
      ASSERT_EQ(staticlm_decode(c, token), STATICLM_OK) << "position " << position;
    }
  }
  std::printf("gemma3 tiny: %d greedy tokens matched, %d near ties\n", matched, ties);
  EXPECT_LE(ties, 3) << "near ties should be rare";
}

// Sinks on the global layer (gemma3_sinks_test): 3 sinks and a window of 20 there, the sliding
// layers at the model's 12, through a 72-token prompt past the context of 64, against the CPU
// and, with the f32 cache, against the StreamingLLM oracle (tests/golden/gemma3_tiny_sinks.txt).
TEST_P(VulkanGemma3ParityTest, SinksOnTheGlobalLayerPastTheContext) {
  staticlm::test::WindowLogitsGolden oracle;
  ASSERT_TRUE(staticlm::test::ReadWindowLogitsGolden(STATICLM_GOLDEN_DIR "/gemma3_tiny_sinks.txt",
                                                     &oracle));
  CREATE_OR_SKIP(b, 5, GetParam(), oracle.sinks, oracle.global_window);
  const size_t first = 13;
  for (staticlm_context* c : {b.cpu.get(), b.gpu.get()}) {
    ASSERT_EQ(staticlm_prefill(c, oracle.tokens.data(), first), STATICLM_OK);
  }
  float worst = 0.0f, worst_oracle = 0.0f;
  for (size_t p = first; p < oracle.tokens.size(); ++p) {
    for (staticlm_context* c : {b.cpu.get(), b.gpu.get()}) {
      ASSERT_EQ(staticlm_decode(c, oracle.tokens[p]), STATICLM_OK) << "position " << p;
    }
    std::vector<float> want = Logits(b.cpu.get()), got = Logits(b.gpu.get());
    const float diff = MaxDifference(want, got);
    EXPECT_LE(diff, Tolerance() * std::max(1.0f, MaxAbs(want))) << "position " << p;
    worst = std::max(worst, diff);
    if (GetParam() == STATICLM_KV_F32) {
      const float d = MaxDifference(oracle.logits[p - size_t(oracle.window)], got);
      EXPECT_LT(d, kTransformersTolerance) << "position " << p;
      worst_oracle = std::max(worst_oracle, d);
    }
  }
  std::printf("gemma3 tiny with sinks: vulkan vs cpu %.2e, vs the oracle %.2e\n", worst,
              worst_oracle);
}

INSTANTIATE_TEST_SUITE_P(KvCache, VulkanGemma3ParityTest,
                         ::testing::Values(STATICLM_KV_F32, STATICLM_KV_F16), [](const auto& info) {
                           return info.param == STATICLM_KV_F32 ? "f32" : "f16";
                         });

}  // namespace
