#include "tests/support/backend_parity.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/context_helpers.h"

namespace staticlm::test {
namespace {

ContextPtr Create(const char* backend, const char* model, const ParityMode& mode,
                  bool reference_kernels, std::string* error) {
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.max_context = mode.max_context;
  limits.prefill_chunk = mode.prefill_chunk;
  limits.backend = backend;
  limits.window = mode.window;
  limits.sinks = mode.sinks;
  limits.kv_type = mode.kv;
  limits.reference_kernels = reference_kernels ? 1 : 0;
  return TryCreateContext(model, limits, error);
}

float MaxDifference(const std::vector<float>& a, const std::vector<float>& b) {
  float d = 0.0f;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
  return d;
}

std::string PromptText(int repeats) {
  const std::string text =
      "The history of the Roman Empire spans more than a thousand years, from the founding of "
      "the city to the fall of Constantinople in 1453.";
  std::string all = text;
  for (int i = 1; i < repeats; ++i) all += " " + text;
  return all;
}

}  // namespace

void CompareGreedyWithCpu(const char* backend, const char* model, const ParityMode& mode,
                          NoDevicePredicate no_device) {
  std::string error;
  ContextPtr device = Create(backend, model, mode, false, &error);
  if (device == nullptr && no_device(error)) {
    GTEST_SKIP() << "no usable " << backend << " device: " << error;
  }
  ASSERT_NE(device, nullptr) << error;
  ContextPtr cpu = Create("cpu", model, mode, false, &error);
  ASSERT_NE(cpu, nullptr) << error;
  EXPECT_STREQ(staticlm_backend_name(device.get()), backend);
  const bool quantized = mode.kv == STATICLM_KV_Q8 || mode.kv == STATICLM_KV_Q4;
  ContextPtr cpu_ref;
  if (quantized) {
    cpu_ref = Create("cpu", model, mode, true, &error);
    ASSERT_NE(cpu_ref, nullptr) << error;
  }

  const std::string text = PromptText(mode.prompt_repeats);
  std::vector<int32_t> tokens(text.size() + 8);
  size_t n = 0;
  ASSERT_EQ(
      staticlm_tokenize(cpu.get(), text.data(), text.size(), 0, tokens.data(), tokens.size(), &n),
      STATICLM_OK);
  ASSERT_GT(n, size_t(mode.prefill_chunk)) << "the prompt should span more than one chunk";
  for (staticlm_context* c : {cpu.get(), device.get(), cpu_ref.get()}) {
    if (c != nullptr) {
      ASSERT_EQ(staticlm_prefill(c, tokens.data(), n), STATICLM_OK) << staticlm_last_error(c);
    }
  }

  float worst = 0.0f, worst_cpu_pair = 0.0f;
  std::vector<float> diffs;
  int matched = 0, ties = 0;
  for (int step = 0; step < mode.steps; ++step) {
    const std::vector<float> want = Logits(cpu.get()), got = Logits(device.get());
    const float diff = MaxDifference(want, got);
    worst = std::max(worst, diff);
    if (quantized) {
      worst_cpu_pair = std::max(worst_cpu_pair, MaxDifference(want, Logits(cpu_ref.get())));
    }
    diffs.push_back(diff);
    const float bound = std::max(kLogitTolerance, 2.0f * worst_cpu_pair);
    const int32_t token = Argmax(want);
    if (Argmax(got) != token) {
      ASSERT_LT(TopTwoGap(want), bound)
          << "step " << step << ": cpu " << token << ", " << backend << " " << Argmax(got);
      ++ties;
      if (!mode.continue_past_ties) {
        std::printf("near tie at step %d; comparison stops\n", step);
        break;
      }
      std::printf("near tie at step %d; both go on with the CPU's token\n", step);
    } else {
      ++matched;
    }
    for (staticlm_context* c : {cpu.get(), device.get(), cpu_ref.get()}) {
      if (c != nullptr) {
        ASSERT_EQ(staticlm_decode(c, token), STATICLM_OK) << staticlm_last_error(c);
      }
    }
  }
  std::printf(
      "%s: %zu prompt tokens, %d greedy tokens matched (%d near ties); largest logit "
      "difference %.5f",
      backend, n, matched, ties, worst);
  if (quantized) std::printf(" (cpu fast vs reference: %.5f)", worst_cpu_pair);
  std::printf("\n");
  const float bound = std::max(kLogitTolerance, 2.0f * worst_cpu_pair);
  for (size_t step = 0; step < diffs.size(); ++step) {
    EXPECT_LE(diffs[step], bound) << "step " << step;
  }
  EXPECT_GE(matched, 8);
  if (mode.continue_past_ties) {
    EXPECT_EQ(int(diffs.size()), mode.steps);
    EXPECT_LE(ties, mode.steps / 10) << "near ties should be rare";
  }
}

}  // namespace staticlm::test
