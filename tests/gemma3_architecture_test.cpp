// The gemma3 architecture against transformers: a small random-weight Gemma3ForCausalLM shaped
// like Gemma 3 270M where it matters (one KV head, head size 32 ≠ width / heads, GeGLU, per-head
// q/k norms, post-attention and post-FFN norms, scaled embeddings, tied head, five sliding layers
// and one global, RoPE base 1e4 on the sliding layers and 1e6 on the global one), made with its
// expected logits by tests/reference/make_gemma3_golden.py (tests/golden/gemma3_tiny.{gguf,txt}).
// A 48-token prompt runs through the model's window of 12 in chunks of 5 and one token at a
// time; the logits at every position from the window on must match transformers'. The golden
// script asserts that the same weights with every layer global, or with one RoPE base on every
// layer, differ there by more than 1.7: a runtime that got the hybrid cache or the per-layer
// base wrong fails. No window option is given: the family's layers slide by design.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/staticlm.h"
#include "tests/support/context_helpers.h"
#include "tests/support/golden_files.h"

namespace {

constexpr const char* kModel = STATICLM_GOLDEN_DIR "/gemma3_tiny.gguf";
// f32 weights and an f32 cache: only the order of float additions differs from torch.
constexpr float kTolerance = 2e-3f;

using Context = staticlm::test::ContextPtr;
using staticlm::test::WindowLogitsGolden;

staticlm_limits Limits(int context, int chunk, bool reference) {
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.max_context = context;
  limits.prefill_chunk = chunk;
  limits.kv_type = STATICLM_KV_F32;
  limits.reference_kernels = reference ? 1 : 0;
  return limits;
}

// Creates a context or returns the error in *error.
Context Create(const staticlm_limits& limits, std::string* error) {
  staticlm_context* ctx = nullptr;
  char message[256] = {0};
  if (staticlm_create(kModel, &limits, &ctx, message, sizeof(message)) != STATICLM_OK) {
    *error = message;
  }
  return Context(ctx);
}

float MaxDifference(const staticlm_context* ctx, const std::vector<float>& expected) {
  const float* l = staticlm_logits(ctx);
  float most = 0.0f;
  for (size_t i = 0; i < expected.size(); ++i)
    most = std::fmax(most, std::fabs(l[i] - expected[i]));
  return most;
}

class Gemma3ArchitectureTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(
        staticlm::test::ReadWindowLogitsGolden(STATICLM_GOLDEN_DIR "/gemma3_tiny.txt", &golden_));
  }
  WindowLogitsGolden golden_;
};

// Prefill 20 tokens in chunks of 5 (the sliding layers' rings wrap), then one token at a time.
TEST_P(Gemma3ArchitectureTest, MatchesTransformersBeyondTheWindow) {
  std::string error;
  Context ctx = Create(Limits(64, 5, GetParam()), &error);
  ASSERT_TRUE(ctx) << error;
  const size_t first = 20;
  ASSERT_EQ(staticlm_prefill(ctx.get(), golden_.tokens.data(), first), STATICLM_OK);
  float worst = MaxDifference(ctx.get(), golden_.logits[first - 1 - golden_.window]);
  for (size_t p = first; p < golden_.tokens.size(); ++p) {
    ASSERT_EQ(staticlm_decode(ctx.get(), golden_.tokens[p]), STATICLM_OK) << "position " << p;
    float d = MaxDifference(ctx.get(), golden_.logits[p - golden_.window]);
    EXPECT_LT(d, kTolerance) << "position " << p;
    worst = std::fmax(worst, d);
  }
  std::printf("gemma3 tiny, %s kernels: worst |logit - transformers| %.2e at positions %d..%zu\n",
              GetParam() ? "reference" : "fast", worst, golden_.window, golden_.tokens.size() - 1);
}

// The whole prompt in one chunk, then the logits of the last position.
TEST_P(Gemma3ArchitectureTest, OneChunkPrefillMatches) {
  std::string error;
  const int n = static_cast<int>(golden_.tokens.size());
  Context ctx = Create(Limits(64, n, GetParam()), &error);
  ASSERT_TRUE(ctx) << error;
  ASSERT_EQ(staticlm_prefill(ctx.get(), golden_.tokens.data(), golden_.tokens.size()), STATICLM_OK);
  EXPECT_LT(MaxDifference(ctx.get(), golden_.logits.back()), kTolerance);
}

INSTANTIATE_TEST_SUITE_P(Kernels, Gemma3ArchitectureTest, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "reference" : "fast"; });

// The model's window is part of the model: another one is refused, naming it.
TEST(Gemma3ArchitectureOptions, AnotherWindowIsRefused) {
  staticlm_limits limits = Limits(64, 5, false);
  limits.window = 8;
  std::string error;
  Context ctx = Create(limits, &error);
  EXPECT_FALSE(ctx);
  EXPECT_NE(error.find("window of 12 tokens"), std::string::npos) << error;
}

}  // namespace
