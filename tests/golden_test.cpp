// The CPU backend against Hugging Face transformers on the real model: logits at chosen
// positions and 64-token greedy continuations (tests/golden/, made by
// tests/reference/make_golden.py).
//
// Tolerances. transformers dequantizes the same Q4_1/Q8_0 weights to f32 and runs the same f32
// arithmetic; with an f32 KV cache only the order of summation differs, which moved logits
// (magnitudes up to ~45) by 8e-5 at most when this was written: kF32Tolerance = 1e-3 leaves a
// 12x margin. The default f16 cache also rounds every cached key and value to 11 significant
// bits (relative 2^-11 ≈ 5e-4); over 30 layers that moved logits by 0.022 at most:
// kLogitTolerance = 0.1 for it, and for the near-tie rule of the greedy test. A real mistake —
// a wrong RoPE layout, a missing norm, an off-by-one position — moves logits by whole units.
// Each test prints the largest difference it saw.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/staticlm.h"
#include "tests/support/context_helpers.h"
#include "tests/support/golden_files.h"
#include "tests/support/greedy_check.h"

namespace {

constexpr float kF32Tolerance = 1e-3f;
constexpr float kLogitTolerance = 0.1f;

using Context = staticlm::test::ContextPtr;

Context Create(staticlm_kv_type kv, int chunk, uint32_t disabled_fusions = 0,
               int32_t activation_bits = 0) {
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.disabled_fusions = disabled_fusions;
  limits.activation_bits = activation_bits;
  limits.max_context = 512;
  limits.prefill_chunk = chunk;
  limits.kv_type = kv;
  staticlm_context* ctx = nullptr;
  char error[256] = {0};
  staticlm_status s = staticlm_create(STATICLM_DEFAULT_MODEL, &limits, &ctx, error, sizeof(error));
  EXPECT_EQ(s, STATICLM_OK) << error;
  return Context(ctx);
}

int32_t Argmax(const float* logits, int32_t n) {
  return static_cast<int32_t>(std::max_element(logits, logits + n) - logits);
}

// The f32-cache tolerance is for f32 arithmetic throughout; integer activations get the
// general one.
void CheckLogits(staticlm_kv_type kv, int chunk, uint32_t disabled_fusions = 0,
                 int32_t activation_bits = 0) {
  const float tolerance =
      kv == STATICLM_KV_F32 && activation_bits == 0 ? kF32Tolerance : kLogitTolerance;
  std::vector<staticlm::test::LogitsCase> cases;
  std::string error;
  ASSERT_TRUE(staticlm::test::ReadLogitsGolden(STATICLM_GOLDEN_DIR "/logits.txt", &cases, &error))
      << error;
  ASSERT_FALSE(cases.empty());
  Context ctx = Create(kv, chunk, disabled_fusions, activation_bits);
  ASSERT_NE(ctx, nullptr);
  staticlm_model_info info;
  staticlm_get_model_info(ctx.get(), &info);
  float worst = 0.0f;
  for (const auto& c : cases) {
    staticlm_reset(ctx.get());
    int32_t done = 0;
    for (const auto& p : c.positions) {
      ASSERT_LT(p.position, static_cast<int32_t>(c.ids.size()));
      // Prefill up to and including this position; the logits are then those of its token.
      ASSERT_EQ(staticlm_prefill(ctx.get(), c.ids.data() + done, size_t(p.position + 1 - done)),
                STATICLM_OK)
          << staticlm_last_error(ctx.get());
      done = p.position + 1;
      const float* logits = staticlm_logits(ctx.get());
      for (const auto& [id, expected] : p.top) {
        float diff = std::fabs(logits[id] - expected);
        worst = std::max(worst, diff);
        EXPECT_LE(diff, tolerance) << c.name << " position " << p.position << " token " << id
                                   << ": ours " << logits[id] << ", transformers " << expected;
      }
      float gap = p.top[0].second - p.top[1].second;
      if (gap > tolerance) {
        EXPECT_EQ(Argmax(logits, info.vocab_size), p.top[0].first)
            << c.name << " position " << p.position;
      }
    }
  }
  std::printf("largest logit difference vs transformers: %.5f (tolerance %.4f)\n", worst,
              tolerance);
}

TEST(GoldenTest, LogitsMatchTransformersWithF32Cache) {
  CheckLogits(STATICLM_KV_F32, 64);
}

TEST(GoldenTest, UnfusedPlanLogitsMatchTransformers) {
  CheckLogits(STATICLM_KV_F32, 64, staticlm_fusion_pass("all"));
}

TEST(GoldenTest, LogitsMatchTransformersWithF16CacheAndSmallChunks) {
  CheckLogits(STATICLM_KV_F16, 7);  // chunks of 7 cut every prompt at awkward places
}

TEST(GoldenTest, LogitsMatchTransformersWithInt16Activations) {
  CheckLogits(STATICLM_KV_F32, 64, 0, 16);
  CheckLogits(STATICLM_KV_F16, 7, 0, 16);
}

// Greedy continuation: token for token, with the near-tie rule of tests/support/greedy_check.h.
void CheckGreedy(int32_t activation_bits) {
  std::vector<staticlm::test::GreedyCase> cases;
  std::string error;
  ASSERT_TRUE(staticlm::test::ReadGreedyGolden(STATICLM_GOLDEN_DIR "/greedy.txt", &cases, &error))
      << error;
  ASSERT_GE(cases.size(), 8u);
  Context ctx = Create(STATICLM_KV_F16, 64, 0, activation_bits);
  ASSERT_NE(ctx, nullptr);
#ifdef STATICLM_SANITIZE
  // The sanitizer build is there for memory errors: three 64-token continuations walk every
  // code path the ten do (≈ 5 minutes saved there); the Release build compares all ten.
  cases.resize(3);
#endif
  staticlm::test::CheckGreedyCases(ctx.get(), cases, kLogitTolerance);
}

TEST(GoldenTest, GreedyContinuationsMatchTransformers) {
  CheckGreedy(0);
}

TEST(GoldenTest, GreedyContinuationsMatchTransformersWithInt16Activations) {
  CheckGreedy(16);
}

// The prompts' token ids in greedy.txt come from transformers' tokenizer and chat template;
// ours must give the same ids from the same text.
TEST(GoldenTest, GreedyPromptsTokenizeIdentically) {
  std::vector<staticlm::test::GreedyCase> cases;
  std::string error;
  ASSERT_TRUE(staticlm::test::ReadGreedyGolden(STATICLM_GOLDEN_DIR "/greedy.txt", &cases, &error))
      << error;
  Context ctx = Create(STATICLM_KV_F16, 64);
  ASSERT_NE(ctx, nullptr);
  for (const auto& c : cases) {
    std::vector<int32_t> ids(c.text.size() + 2);
    size_t n = 0;
    ASSERT_EQ(
        staticlm_tokenize(ctx.get(), c.text.data(), c.text.size(), 1, ids.data(), ids.size(), &n),
        STATICLM_OK)
        << staticlm_last_error(ctx.get());
    ids.resize(n);
    EXPECT_EQ(ids, c.prompt_ids) << c.name;
  }
}

}  // namespace
