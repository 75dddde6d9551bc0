#include "tests/support/greedy_check.h"

#include <cmath>
#include <cstdio>

#include <gtest/gtest.h>

namespace staticlm::test {
namespace {

// Compares one case; *near_tie says whether it stopped at an accepted near tie.
void CheckCase(staticlm_context* ctx, const staticlm_sampler& greedy, const GreedyCase& c,
               float tolerance, bool* near_tie) {
  ASSERT_EQ(c.tokens.size(), c.gaps.size());
  ASSERT_TRUE(c.deviations.empty() || c.deviations.size() == c.tokens.size()) << c.name;
  staticlm_reset(ctx);
  ASSERT_EQ(staticlm_prefill(ctx, c.prompt_ids.data(), c.prompt_ids.size()), STATICLM_OK)
      << staticlm_last_error(ctx);
  for (size_t i = 0; i < c.tokens.size(); ++i) {
    int32_t token = -1;
    ASSERT_EQ(staticlm_sample(ctx, &greedy, &token), STATICLM_OK);
    if (token != c.tokens[i]) {
      const float limit = tolerance + (c.deviations.empty() ? 0.0f : 2.0f * c.deviations[i]);
      ASSERT_LT(c.gaps[i], limit) << c.name << " step " << i << ": ours " << token << ", reference "
                                  << c.tokens[i] << " with a top-2 gap of " << c.gaps[i]
                                  << " (near-tie limit " << limit << ")";
      std::printf("%s: near tie at step %zu (gap %.4f, limit %.4f): ours %d, reference %d\n",
                  c.name.c_str(), i, c.gaps[i], limit, token, c.tokens[i]);
      *near_tie = true;
      return;
    }
    if (i + 1 < c.tokens.size()) {
      ASSERT_EQ(staticlm_decode(ctx, token), STATICLM_OK);
    }
  }
}

}  // namespace

void CheckGreedyCases(staticlm_context* ctx, const std::vector<GreedyCase>& cases,
                      float tolerance) {
  staticlm_sampler greedy;
  staticlm_sampler_default(&greedy);
  greedy.temperature = 0.0f;
  int near_ties = 0;
  for (const GreedyCase& c : cases) {
    bool near_tie = false;
    CheckCase(ctx, greedy, c, tolerance, &near_tie);
    if (::testing::Test::HasFatalFailure()) return;
    near_ties += near_tie ? 1 : 0;
    std::printf("%s: %zu prompt ids, continuation checked\n", c.name.c_str(), c.prompt_ids.size());
  }
  std::printf("%zu cases, %d stopped at a near tie\n", cases.size(), near_ties);
}

void CheckTopLogits(staticlm_context* ctx, const std::vector<GreedyCase>& cases, float tolerance) {
  staticlm_model_info info;
  staticlm_get_model_info(ctx, &info);
  for (const GreedyCase& c : cases) {
    ASSERT_EQ(c.top1.size(), c.tokens.size()) << c.name;
    staticlm_reset(ctx);
    ASSERT_EQ(staticlm_prefill(ctx, c.prompt_ids.data(), c.prompt_ids.size()), STATICLM_OK)
        << staticlm_last_error(ctx);
    for (size_t i = 0; i < c.tokens.size(); ++i) {
      const float* logits = staticlm_logits(ctx);
      ASSERT_NE(logits, nullptr);
      float best = logits[0];
      for (int32_t v = 1; v < info.vocab_size; ++v) best = std::fmax(best, logits[v]);
      EXPECT_NEAR(best, c.top1[i], tolerance) << c.name << " step " << i;
      ASSERT_EQ(staticlm_decode(ctx, c.tokens[i]), STATICLM_OK);
    }
  }
}

}  // namespace staticlm::test
