// Gemma 3 with sinks: --sinks S --window W bound a hybrid model's global layers to StreamingLLM's
// cache (the S sinks and the last W − S positions) while its sliding layers keep the model's
// window, so that positions go on past the context in constant memory. The oracle is
// transformers: the small random Gemma 3 of gemma3_architecture_test (tests/golden/
// gemma3_tiny.gguf: five layers sliding over 12 tokens, the sixth global) with the global
// layer's attention written from StreamingLLM's definition (tests/reference/
// make_gemma3_sinks_golden.py, which asserts that the global layer keeping the whole context,
// the sinks scored at their true distances, or a window without sinks, each differ from it by
// more than 0.05 somewhere past the evictions — measured 2.0, 0.82 and 1.34, against this test's
// tolerance of 2e-3 — so a runtime making any of those mistakes fails here). A 72-token prompt runs
// past the model's context of 64 through 3 sinks and a global window of 20.
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
// f32 weights and an f32 cache: only the order of float additions differs from torch (as
// gemma3_architecture_test).
constexpr float kTolerance = 2e-3f;
constexpr int kContext = 64, kChunk = 5;

using staticlm::test::ContextPtr;
using staticlm::test::WindowLogitsGolden;

// The limits every test here runs: f32 cache, chunks of 5, a context of 64.
staticlm_limits SinkLimits(int sinks, int window) {
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.max_context = kContext;
  limits.prefill_chunk = kChunk;
  limits.kv_type = STATICLM_KV_F32;
  limits.sinks = sinks;
  limits.window = window;
  return limits;
}

class Gemma3SinksTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(staticlm::test::ReadWindowLogitsGolden(STATICLM_GOLDEN_DIR "/gemma3_tiny_sinks.txt",
                                                       &golden_));
    ASSERT_GT(golden_.sinks, 0);
    ASSERT_GT(golden_.tokens.size(), size_t{kContext});  // past the context
  }

  staticlm_limits Limits() const {
    staticlm_limits limits = SinkLimits(golden_.sinks, golden_.global_window);
    limits.reference_kernels = GetParam() ? 1 : 0;
    return limits;
  }

  // |logits − the oracle's| at the context's current position, the largest.
  float Difference(const staticlm_context* ctx) const {
    const int32_t p = staticlm_position(ctx) - 1;
    const std::vector<float>& expected = golden_.logits.at(p - golden_.window);
    const float* l = staticlm_logits(ctx);
    float most = 0.0f;
    for (size_t i = 0; i < expected.size(); ++i) {
      most = std::fmax(most, std::fabs(l[i] - expected[i]));
    }
    return most;
  }

  // Decodes the prompt's tokens from the context's position up to `end`, each step's logits
  // against the oracle; returns the largest difference.
  float DecodeTo(staticlm_context* ctx, size_t end) const {
    float worst = 0.0f;
    for (size_t p = staticlm_position(ctx); p < end; ++p) {
      EXPECT_EQ(staticlm_decode(ctx, golden_.tokens[p]), STATICLM_OK) << "position " << p;
      const float d = Difference(ctx);
      EXPECT_LT(d, kTolerance) << "position " << p;
      worst = std::fmax(worst, d);
    }
    return worst;
  }

  const char* Kernels() const { return GetParam() ? "reference" : "fast"; }

  WindowLogitsGolden golden_;
};

// Prefill up to the model's window in chunks, then one token at a time: the global layer evicts
// from position 20 on, the sliding layers from 12, and positions pass the context at 64.
TEST_P(Gemma3SinksTest, MatchesTheStreamingLlmOracleBeyondTheContext) {
  ContextPtr ctx = staticlm::test::CreateContext(kModel, Limits());
  ASSERT_TRUE(ctx);
  const size_t first = static_cast<size_t>(golden_.window) + 1;
  ASSERT_EQ(staticlm_prefill(ctx.get(), golden_.tokens.data(), first), STATICLM_OK);
  float worst = Difference(ctx.get());
  worst = std::fmax(worst, DecodeTo(ctx.get(), golden_.tokens.size()));
  std::printf(
      "gemma3 tiny, sinks %d, global window %d, %s kernels: worst |logit - oracle| %.2e "
      "at positions %d..%zu\n",
      golden_.sinks, golden_.global_window, Kernels(), worst, golden_.window,
      golden_.tokens.size() - 1);
}

// Chunks of 5 all the way, so prefill chunks cross the global layer's evictions: each chunk's
// last logits against the oracle.
TEST_P(Gemma3SinksTest, ChunkedPrefillAcrossEvictionsMatches) {
  ContextPtr ctx = staticlm::test::CreateContext(kModel, Limits());
  ASSERT_TRUE(ctx);
  const size_t n = golden_.tokens.size();
  for (size_t p = 0; p < n; p += kChunk) {
    const size_t take = std::min<size_t>(kChunk, n - p);
    ASSERT_EQ(staticlm_prefill(ctx.get(), golden_.tokens.data() + p, take), STATICLM_OK);
    if (p + take > static_cast<size_t>(golden_.window)) {
      EXPECT_LT(Difference(ctx.get()), kTolerance) << "chunk ending at " << p + take - 1;
    }
  }
}

// A session saved past the evictions and loaded into a new context continues as one run.
TEST_P(Gemma3SinksTest, SessionSavedPastTheEvictionsContinuesExactly) {
  const std::string path = ::testing::TempDir() + "gemma3_sinks_" + Kernels() + ".session";
  {
    ContextPtr ctx = staticlm::test::CreateContext(kModel, Limits());
    ASSERT_TRUE(ctx);
    ASSERT_EQ(staticlm_prefill(ctx.get(), golden_.tokens.data(), 40), STATICLM_OK);
    ASSERT_EQ(staticlm_session_save(ctx.get(), path.c_str()), STATICLM_OK);
  }
  ContextPtr ctx = staticlm::test::CreateContext(kModel, Limits());
  ASSERT_TRUE(ctx);
  ASSERT_EQ(staticlm_session_load(ctx.get(), path.c_str()), STATICLM_OK);
  std::remove(path.c_str());
  EXPECT_EQ(staticlm_position(ctx.get()), 40);
  EXPECT_LT(Difference(ctx.get()), kTolerance);
  DecodeTo(ctx.get(), golden_.tokens.size());
}

// A plan file keeps the global layers' window (format 7): a context run from it computes the
// same logits as one that built its plans.
TEST_P(Gemma3SinksTest, PlanFileKeepsTheGlobalWindow) {
  const std::string path = ::testing::TempDir() + "gemma3_sinks_" + Kernels() + ".plan";
  staticlm_limits limits = Limits();
  char error[256] = {0};
  ASSERT_EQ(staticlm_save_plan(kModel, &limits, path.c_str(), error, sizeof(error)), STATICLM_OK)
      << error;
  limits.plan_path = path.c_str();
  ContextPtr ctx = staticlm::test::CreateContext(kModel, limits);
  std::remove(path.c_str());
  ASSERT_TRUE(ctx);
  ASSERT_EQ(staticlm_prefill(ctx.get(), golden_.tokens.data(), 30), STATICLM_OK);
  DecodeTo(ctx.get(), golden_.tokens.size());
}

INSTANTIATE_TEST_SUITE_P(Kernels, Gemma3SinksTest, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "reference" : "fast"; });

// The plan: the sliding layers at the model's window without sinks (W + C − 1 = 16 slots), the
// global layer a Sink cache of 20 + C − 1 = 24 slots; every layer a ring, none global-sized. By
// the formula: k and v, f32, one KV head of 32.
TEST(Gemma3SinksPlan, SlidingLayersKeepTheModelWindowAndTheGlobalLayerItsSinkRing) {
  const staticlm_limits limits = SinkLimits(3, 20);
  staticlm_memory m{};
  char error[256] = {0};
  ASSERT_EQ(staticlm_plan_memory(kModel, &limits, &m, error, sizeof(error)), STATICLM_OK) << error;
  const uint64_t row = 32 * 4;
  EXPECT_EQ(m.kv_cache_bytes, 5 * 2 * 16 * row + 1 * 2 * 24 * row);
  EXPECT_EQ(m.kv_ring_bytes, m.kv_cache_bytes);
  EXPECT_EQ(m.kv_global_bytes, 0u);
  EXPECT_EQ(m.kv_all_global_bytes, 6 * 2 * uint64_t{kContext} * row);
}

std::string CreateError(const char* model, const staticlm_limits& limits) {
  std::string error;
  ContextPtr ctx = staticlm::test::TryCreateContext(model, limits, &error);
  EXPECT_FALSE(ctx);
  return error;
}

// A global window shorter than the model's would leave the global layer seeing less than the
// sliding ones; a model whose every layer slides is bounded already.
TEST(Gemma3SinksOptions, WhatCannotBeBoundIsRefusedWithTheReason) {
  std::string error = CreateError(kModel, SinkLimits(3, 8));
  EXPECT_NE(error.find("at least the model's sliding window of 12"), std::string::npos) << error;
  error = CreateError(STATICLM_GOLDEN_DIR "/mistral_window.gguf", SinkLimits(3, 12));
  EXPECT_NE(error.find("on every layer"), std::string::npos) << error;
  error = CreateError(kModel, SinkLimits(3, kContext + 1));
  EXPECT_NE(error.find("global layers' window 65"), std::string::npos) << error;
}

}  // namespace
