// Sliding-window attention (--window W) against transformers: a small random-weight Mistral
// model with sliding_window = 12 (tests/golden/mistral_window.gguf, made with its expected
// logits by tests/reference/make_sliding_window_golden.py). A 48-token prompt runs through a
// window of 12 in chunks of 5 and one token at a time, past the model's context length (32);
// the logits at every position beyond the window must match transformers'; the window is the
// model's, used with or without --window (the golden script asserts that the model without it
// differs clearly beyond the window, so the test can fail).
// Per-layer policy: tests/golden/layered_window.gguf (transformers' Qwen2 with zero biases and
// layer types [sliding, full]) with its window and pattern read from the model's metadata.
#include <cmath>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/staticlm.h"
#include "tests/support/context_helpers.h"
#include "tests/support/golden_files.h"

namespace {

constexpr const char* kModel = STATICLM_GOLDEN_DIR "/mistral_window.gguf";
constexpr const char* kLayeredModel = STATICLM_GOLDEN_DIR "/layered_window.gguf";
// f32 weights and an f32 cache: only the order of float additions differs from torch.
constexpr float kTolerance = 2e-3f;

using Context = staticlm::test::ContextPtr;
using Golden = staticlm::test::WindowLogitsGolden;
using staticlm::test::ReadWindowLogitsGolden;

Context Create(int window, int context, int chunk, bool reference, const char* model = kModel,
               int global_every = 0) {
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.max_context = context;
  limits.prefill_chunk = chunk;
  limits.kv_type = STATICLM_KV_F32;
  limits.window = window;
  limits.global_every = global_every;
  limits.reference_kernels = reference ? 1 : 0;
  staticlm_context* ctx = nullptr;
  char error[256] = {0};
  EXPECT_EQ(staticlm_create(model, &limits, &ctx, error, sizeof(error)), STATICLM_OK) << error;
  return Context(ctx);
}

float MaxDifference(const staticlm_context* ctx, const std::vector<float>& expected) {
  const float* l = staticlm_logits(ctx);
  float most = 0.0f;
  for (size_t i = 0; i < expected.size(); ++i)
    most = std::fmax(most, std::fabs(l[i] - expected[i]));
  return most;
}

class SlidingWindowTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(ReadWindowLogitsGolden(STATICLM_GOLDEN_DIR "/mistral_window.txt", &golden_));
    ASSERT_TRUE(ReadWindowLogitsGolden(STATICLM_GOLDEN_DIR "/layered_window.txt", &layered_));
  }
  // Prefills `first` tokens in chunks, then decodes the rest one at a time; returns the largest
  // logit difference from `g` at positions first − 1 … end.
  static float Run(staticlm_context* ctx, const Golden& g, size_t first) {
    EXPECT_EQ(staticlm_prefill(ctx, g.tokens.data(), first), STATICLM_OK);
    float worst = MaxDifference(ctx, g.logits[first - 1 - size_t(g.window)]);
    for (size_t p = first; p < g.tokens.size(); ++p) {
      EXPECT_EQ(staticlm_decode(ctx, g.tokens[p]), STATICLM_OK) << "position " << p;
      worst = std::fmax(worst, MaxDifference(ctx, g.logits[p - size_t(g.window)]));
    }
    return worst;
  }
  Golden golden_, layered_;
};

// Prefill 20 tokens in chunks of 5 (positions past W while the ring wraps), then one token at
// a time to position 47, past the model's context length of 32.
TEST_P(SlidingWindowTest, MatchesTransformersBeyondTheWindow) {
  Context ctx = Create(golden_.window, 32, 5, GetParam());
  ASSERT_NE(ctx, nullptr);
  const int first = 20;
  ASSERT_EQ(staticlm_prefill(ctx.get(), golden_.tokens.data(), first), STATICLM_OK);
  float worst = MaxDifference(ctx.get(), golden_.logits[first - 1 - golden_.window]);
  for (size_t p = first; p < golden_.tokens.size(); ++p) {
    ASSERT_EQ(staticlm_decode(ctx.get(), golden_.tokens[p]), STATICLM_OK) << "position " << p;
    float d = MaxDifference(ctx.get(), golden_.logits[p - golden_.window]);
    EXPECT_LT(d, kTolerance) << "position " << p;
    worst = std::fmax(worst, d);
  }
  EXPECT_LT(worst, kTolerance);
  std::printf("largest logit difference from transformers at positions %d..%zu: %.2e\n",
              golden_.window, golden_.tokens.size() - 1, worst);
}

// The whole 48-token prompt in one prefill call: ten chunks, the last one partial.
TEST_P(SlidingWindowTest, ChunkedPrefillOfALongPromptMatches) {
  Context ctx = Create(golden_.window, 32, 5, GetParam());
  ASSERT_NE(ctx, nullptr);
  ASSERT_EQ(staticlm_prefill(ctx.get(), golden_.tokens.data(), golden_.tokens.size()), STATICLM_OK);
  EXPECT_LT(MaxDifference(ctx.get(), golden_.logits.back()), kTolerance);
  EXPECT_EQ(staticlm_position(ctx.get()), static_cast<int32_t>(golden_.tokens.size()));
}

// The window is the model's: with no window option the cache still slides over the metadata's
// window (make_sliding_window_golden.py asserts that the model without one differs by more than
// 0.05 at every position beyond W, so a static cache would fail), runs past the model's
// context, and another window is refused.
TEST_P(SlidingWindowTest, TheModelsWindowSlidesWithoutAnOption) {
  Context ctx = Create(0, 32, 5, GetParam());
  ASSERT_NE(ctx, nullptr);
  EXPECT_LT(Run(ctx.get(), golden_, 20), kTolerance);
  EXPECT_EQ(staticlm_position(ctx.get()), static_cast<int32_t>(golden_.tokens.size()));
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.max_context = 32;
  limits.window = 8;
  staticlm_context* other = nullptr;
  char error[256] = {0};
  EXPECT_NE(staticlm_create(kModel, &limits, &other, error, sizeof(error)), STATICLM_OK);
  EXPECT_NE(std::string(error).find("window of 12 tokens"), std::string::npos) << error;
}

// --window model: the window from the GGUF's llama.attention.sliding_window.
TEST_P(SlidingWindowTest, WindowFromTheModelsMetadataMatches) {
  Context ctx = Create(STATICLM_WINDOW_FROM_MODEL, 32, 5, GetParam());
  ASSERT_NE(ctx, nullptr);
  EXPECT_LT(Run(ctx.get(), golden_, 20), kTolerance);
}

// Layer 0 windowed, layer 1 global: from the metadata (window 12, pattern 2), asked for by name
// or not. The golden script asserts that every layer windowed differs by more than 0.05.
TEST_P(SlidingWindowTest, PerLayerPolicyMatchesTransformers) {
  Context from_model = Create(STATICLM_WINDOW_FROM_MODEL, 64, 5, GetParam(), kLayeredModel);
  Context without_option = Create(0, 64, 5, GetParam(), kLayeredModel, 0);
  ASSERT_TRUE(from_model && without_option);
  float worst = Run(from_model.get(), layered_, 20);
  EXPECT_LT(worst, kTolerance);
  EXPECT_LT(Run(without_option.get(), layered_, 20), kTolerance);
  std::printf("per-layer policy: largest logit difference from transformers %.2e\n", worst);
}

INSTANTIATE_TEST_SUITE_P(Kernels, SlidingWindowTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "reference" : "fast"; });

}  // namespace
