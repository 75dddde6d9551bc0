// Gemma 3 270M (models/gemma-3-270m-q4_k_m.gguf, `scripts/fetch-model gemma3-270m`) against
// Hugging Face transformers: 32-token greedy continuations of eight prompts, two of them longer
// than the 512-token window of the sliding layers (tests/golden/gemma3_greedy.txt, made by
// tests/reference/make_gemma3_greedy_golden.py). The prompts are transformers' ids, so this
// tests the model, not the tokenizer. No window option is given: the hybrid cache (rings on
// the sliding layers, the whole context on every sixth) comes from the model.
//
// transformers dequantizes the same Q5_0/Q4_K/Q6_K/Q8_0 weights to f32 and runs f32 arithmetic
// with an f32 cache; so does this test: only the order of summation differs. A divergence is
// accepted only where transformers' top-2 gap is below kLogitTolerance (a near tie summation
// order may flip), and the comparison of that case stops there. A real mistake (the window, a
// RoPE base, a norm) moves logits by whole units.
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/staticlm.h"
#include "tests/support/context_helpers.h"
#include "tests/support/golden_files.h"

namespace {

constexpr const char* kModel = STATICLM_GEMMA_MODEL;
constexpr float kLogitTolerance = 0.1f;

using Context = staticlm::test::ContextPtr;

bool HaveModel() {
  FILE* f = std::fopen(kModel, "rb");
  if (f != nullptr) std::fclose(f);
  return f != nullptr;
}

TEST(Gemma3GoldenTest, GreedyContinuationsMatchTransformers) {
  if (!HaveModel()) {
    GTEST_SKIP() << kModel << " is absent (scripts/fetch-model gemma3-270m fetches it)";
  }
  std::vector<staticlm::test::GreedyCase> cases;
  std::string error;
  ASSERT_TRUE(
      staticlm::test::ReadGreedyGolden(STATICLM_GOLDEN_DIR "/gemma3_greedy.txt", &cases, &error))
      << error;
  ASSERT_EQ(cases.size(), 8u);
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.max_context = 2048;
  limits.prefill_chunk = 64;
  limits.kv_type = STATICLM_KV_F32;
  staticlm_context* raw = nullptr;
  char message[256] = {0};
  ASSERT_EQ(staticlm_create(kModel, &limits, &raw, message, sizeof(message)), STATICLM_OK)
      << message;
  Context ctx(raw);
  staticlm_sampler greedy;
  staticlm_sampler_default(&greedy);
  greedy.temperature = 0.0f;
#ifdef STATICLM_SANITIZE
  // The sanitizer build is there for memory errors: the two long prompts (which walk the rings
  // past the window) and one short one; the Release build compares all eight.
  cases = {cases[0], cases[6], cases[7]};
#endif
  int near_ties = 0;
  for (const auto& c : cases) {
    ASSERT_EQ(c.tokens.size(), c.gaps.size());
    staticlm_reset(ctx.get());
    ASSERT_EQ(staticlm_prefill(ctx.get(), c.prompt_ids.data(), c.prompt_ids.size()), STATICLM_OK)
        << staticlm_last_error(ctx.get());
    for (size_t i = 0; i < c.tokens.size(); ++i) {
      int32_t token = -1;
      ASSERT_EQ(staticlm_sample(ctx.get(), &greedy, &token), STATICLM_OK);
      if (token != c.tokens[i]) {
        ASSERT_LT(c.gaps[i], kLogitTolerance)
            << c.name << " step " << i << ": ours " << token << ", transformers " << c.tokens[i]
            << " with a top-2 gap of " << c.gaps[i];
        std::printf("%s: near tie at step %zu (gap %.4f): ours %d, transformers %d\n",
                    c.name.c_str(), i, c.gaps[i], token, c.tokens[i]);
        ++near_ties;
        break;
      }
      if (i + 1 < c.tokens.size()) {
        ASSERT_EQ(staticlm_decode(ctx.get(), token), STATICLM_OK);
      }
    }
    std::printf("%s: %zu prompt ids, continuation checked\n", c.name.c_str(), c.prompt_ids.size());
  }
  std::printf("%zu cases, %d stopped at a near tie\n", cases.size(), near_ties);
}

}  // namespace
