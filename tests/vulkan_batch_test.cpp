// Batched sequences on the Vulkan backend, through the C API (staticlm_seq_prefill,
// staticlm_decode_batch), against the CPU backend running the very same batch: four sequences,
// one joining late and one leaving early, rows in an order that changes every step, in the
// static cache and in ring caches driven past max_context. Each sequence's logits after its
// prompt and after every batched step must agree within the parity tolerance, and the greedy
// tokens must be equal.
//
// Tolerance: as tests/vulkan_parity_test.cpp — the backends sum in different orders, so logits
// differ in their last bits (0.006 at most there); the bound is the golden tests' 0.1, and
// where the CPU's top-2 gap is below it the device may pick the other token (a near tie). Both
// contexts then go on with the CPU's token, so every later step is still compared. A row read
// from another sequence's cache part, or at another row's position, moves logits by whole
// units.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/staticlm.h"
#include "tests/support/cli_runner.h"
#include "tests/support/context_helpers.h"
#include "tests/support/sanitizer_build.h"

namespace {

using staticlm::test::ContextPtr;
using staticlm::test::Tokens;

constexpr float kLogitTolerance = 0.1f;
constexpr int kSequences = 4;

const char* const kPrompts[kSequences] = {
    "The theory of special relativity states ",
    "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n",
    "Once upon a time, in a small village by the sea, there lived",
    "def fibonacci(n):",
};

struct Mode {
  const char* name;
  int32_t max_context, window, sinks;
  int steps;  // batched steps; the ring modes go past max_context (prompts are 8–25 tokens)
};

// The sanitizer build runs the ring modes 30 steps in a context of 40 (sequence 2's 15-token
// prompt then ends at position 45): every step takes the same host path, and the rings of
// 24 + 8 − 1 slots still wrap and the positions still pass max_context.
constexpr int kRingContext = staticlm::test::kSanitizerBuild ? 40 : 48;
constexpr int kRingSteps = staticlm::test::kSanitizerBuild ? 30 : 40;

const Mode kModes[] = {
    {"static", 96, 0, 0, 10},
    {"window", kRingContext, 24, 0, kRingSteps},
    {"sinks", kRingContext, 24, 4, kRingSteps},
};

staticlm_limits Limits(const Mode& m, const char* backend) {
  staticlm_limits l;
  staticlm_limits_default(&l);
  l.backend = backend;
  l.max_context = m.max_context;
  l.prefill_chunk = 8;
  l.max_batch = kSequences;
  l.threads = 2;
  l.window = m.window;
  l.sinks = m.sinks;
  return l;
}

// A context on `backend`, or null with the error in `error`.
ContextPtr Create(const Mode& m, const char* backend, std::string* error) {
  return staticlm::test::TryCreateContext(STATICLM_DEFAULT_MODEL, Limits(m, backend), error);
}

int32_t VocabSize(staticlm_context* ctx) {
  staticlm_model_info info;
  staticlm_get_model_info(ctx, &info);
  return info.vocab_size;
}

int32_t Argmax(const float* l, int32_t vocab) {
  return static_cast<int32_t>(std::max_element(l, l + vocab) - l);
}

float TopTwoGap(const float* l, int32_t vocab) {
  std::vector<float> v(l, l + vocab);
  std::partial_sort(v.begin(), v.begin() + 2, v.end(), std::greater<float>());
  return v[0] - v[1];
}

// What the comparison saw, over every sequence and step.
struct Tally {
  float worst = 0.0f;
  int compared = 0, matched = 0, ties = 0;
};

// Compares sequence s's logits on both contexts and returns the CPU's greedy token.
int32_t Compare(staticlm_context* cpu, staticlm_context* gpu, int32_t s, Tally* t) {
  const int32_t vocab = VocabSize(cpu);
  const float* want = staticlm_seq_logits(cpu, s);
  const float* got = staticlm_seq_logits(gpu, s);
  EXPECT_NE(want, nullptr);
  EXPECT_NE(got, nullptr);
  if (want == nullptr || got == nullptr) return 0;
  float diff = 0.0f;
  for (int32_t i = 0; i < vocab; ++i) diff = std::max(diff, std::fabs(want[i] - got[i]));
  EXPECT_LE(diff, kLogitTolerance) << "sequence " << s << ", comparison " << t->compared;
  t->worst = std::max(t->worst, diff);
  ++t->compared;
  const int32_t token = Argmax(want, vocab);
  if (Argmax(got, vocab) == token) {
    ++t->matched;
  } else {
    EXPECT_LT(TopTwoGap(want, vocab), kLogitTolerance)
        << "sequence " << s << ": cpu " << token << ", vulkan " << Argmax(got, vocab);
    ++t->ties;
  }
  return token;
}

class VulkanBatchTest : public testing::TestWithParam<Mode> {};

// Sequence s joins (is prefilled) at step start[s]; sequence 1 leaves after 6 tokens; every
// step decodes the next token of each joined, unfinished sequence, in an order that changes.
TEST_P(VulkanBatchTest, EachSequenceMatchesTheCpuBatch) {
  const Mode& m = GetParam();
  std::string error;
  ContextPtr gpu = Create(m, "vulkan", &error);
  if (gpu == nullptr && error.find("no Vulkan") != std::string::npos) {
    GTEST_SKIP() << "no usable Vulkan device: " << error;
  }
  ASSERT_NE(gpu, nullptr) << error;
  ASSERT_STREQ(staticlm_backend_name(gpu.get()), "vulkan");
  ContextPtr cpu = Create(m, "cpu", &error);
  ASSERT_NE(cpu, nullptr) << error;

  const int start[kSequences] = {0, 0, 3, 5};
  const int budget[kSequences] = {m.steps, 6, m.steps, m.steps};
  int decoded[kSequences] = {0, 0, 0, 0};
  int32_t next[kSequences] = {0, 0, 0, 0};
  int32_t most_position = 0;
  Tally tally;
  for (int step = 0; step < m.steps + start[kSequences - 1]; ++step) {
    std::vector<int32_t> seqs, tokens;
    for (int k = 0; k < kSequences; ++k) {
      const int s = (step % 3 == 2) ? kSequences - 1 - k : (k + step) % kSequences;
      if (step < start[s] || decoded[s] == budget[s]) continue;
      if (step == start[s]) {
        std::vector<int32_t> p = Tokens(cpu.get(), kPrompts[s]);
        for (staticlm_context* c : {cpu.get(), gpu.get()}) {
          ASSERT_EQ(staticlm_seq_prefill(c, s, p.data(), p.size()), STATICLM_OK)
              << staticlm_last_error(c);
        }
        next[s] = Compare(cpu.get(), gpu.get(), s, &tally);
      }
      seqs.push_back(s);
      tokens.push_back(next[s]);
      ++decoded[s];
    }
    if (seqs.empty()) continue;
    for (staticlm_context* c : {cpu.get(), gpu.get()}) {
      ASSERT_EQ(staticlm_decode_batch(c, seqs.data(), tokens.data(), seqs.size()), STATICLM_OK)
          << staticlm_last_error(c);
    }
    for (int32_t s : seqs) {
      next[s] = Compare(cpu.get(), gpu.get(), s, &tally);
      EXPECT_EQ(staticlm_seq_position(gpu.get(), s), staticlm_seq_position(cpu.get(), s));
      most_position = std::max(most_position, staticlm_seq_position(gpu.get(), s));
    }
  }
  std::printf(
      "%s: %d comparisons, %d greedy tokens equal, %d near ties, largest logit "
      "difference %.5f, last position %d (max_context %d)\n",
      m.name, tally.compared, tally.matched, tally.ties, tally.worst, most_position, m.max_context);
  EXPECT_LE(tally.ties, tally.compared / 10) << "near ties should be rare";
  if (m.window > 0) {
    EXPECT_GT(most_position, m.max_context) << "the run should pass max_context";
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, VulkanBatchTest, testing::ValuesIn(kModes),
                         [](const testing::TestParamInfo<Mode>& info) { return info.param.name; });

// The texts `staticlm batch` prints ("[i] text" lines, in prompt order), without its figures.
std::string Texts(const std::string& output) {
  std::string texts;
  size_t at = 0;
  while (at < output.size()) {
    size_t end = output.find('\n', at);
    if (end == std::string::npos) end = output.size();
    std::string line = output.substr(at, end - at);
    if (line.rfind("[staticlm]", 0) != 0) texts += line + "\n";
    at = end + 1;
  }
  return texts;
}

// `staticlm batch --backend vulkan`: three prompts through two slots (the third takes a freed
// slot), greedy, print the texts the CPU backend prints.
TEST(VulkanBatchCliTest, BatchCommandPrintsTheCpuTexts) {
  std::string args =
      " --batch 2 --threads 2 --ctx 64 --chunk 8 --temperature 0 "
      "--max-tokens 6 --prompt 'The capital of France is' --prompt "
      "'def fibonacci(n):' --prompt 'Once upon a time'";
  staticlm::test::CliResult gpu = staticlm::test::RunCli("batch --backend vulkan" + args);
  if (gpu.exit_code != 0 && gpu.output.find("no Vulkan") != std::string::npos) {
    GTEST_SKIP() << "no usable Vulkan device: " << gpu.output;
  }
  ASSERT_EQ(gpu.exit_code, 0) << gpu.output;
  staticlm::test::CliResult cpu = staticlm::test::RunCli("batch --backend cpu" + args);
  ASSERT_EQ(cpu.exit_code, 0) << cpu.output;
  EXPECT_NE(gpu.output.find("prompts=3 batch=2"), std::string::npos) << gpu.output;
  EXPECT_NE(Texts(gpu.output).find("[2] "), std::string::npos) << gpu.output;
  EXPECT_EQ(Texts(gpu.output), Texts(cpu.output));
}

}  // namespace
