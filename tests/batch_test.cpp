// Batched sequences: several sequences decoded together in one step give, sequence by sequence,
// bit for bit the logits (and so the tokens) each gives alone in a context of one sequence —
// with rows in any order, sequences joining and leaving, a slot reused, every cache policy,
// and a different thread count. Bad batches fail before anything changes.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/staticlm.h"
#include "tests/support/context_helpers.h"

namespace {

using staticlm::test::ContextPtr;
using staticlm::test::CreateContext;
using staticlm::test::Tokens;

const char* const kPrompts[] = {
    "The theory of special relativity states ",
    "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n",
    "Once upon a time, in a small village by the sea, there lived",
    "def fibonacci(n):",
};
constexpr int kSequences = 4;

struct Mode {
  const char* name;
  int32_t max_context, window, sinks;
  staticlm_kv_type kv;
  int32_t activation_bits = 0;
};

// Generation goes past the window in the ring modes (prompts are 8–25 tokens).
const Mode kModes[] = {
    {"static f16", 96, 0, 0, STATICLM_KV_F16},
    {"window", 96, 24, 0, STATICLM_KV_F16},
    {"sinks q8", 96, 24, 4, STATICLM_KV_Q8},
    {"q4", 96, 0, 0, STATICLM_KV_Q4},
    {"sinks q4", 96, 24, 3, STATICLM_KV_Q4},  // 3 sinks: their slots round up to a key group
    {"int16 activations", 96, 0, 0, STATICLM_KV_F16, 16},
};

staticlm_limits Limits(const Mode& m, int32_t batch, int32_t threads) {
  staticlm_limits l;
  staticlm_limits_default(&l);
  l.max_context = m.max_context;
  l.prefill_chunk = 8;
  l.max_batch = batch;
  l.threads = threads;
  l.window = m.window;
  l.sinks = m.sinks;
  l.kv_type = m.kv;
  l.max_snapshots = 1;
  l.activation_bits = m.activation_bits;
  return l;
}

int32_t VocabSize(staticlm_context* ctx) {
  staticlm_model_info info;
  staticlm_get_model_info(ctx, &info);
  return info.vocab_size;
}

int32_t Greedy(const float* logits, int32_t vocab) {
  return static_cast<int32_t>(std::max_element(logits, logits + vocab) - logits);
}

// What a sequence does alone: its logits after the prompt and after each of `steps` greedy
// tokens, concatenated, and the tokens.
struct Generation {
  std::vector<float> logits;
  std::vector<int32_t> tokens;
};

Generation Alone(const Mode& m, const char* prompt, int steps) {
  Generation run;
  ContextPtr ctx = CreateContext(STATICLM_DEFAULT_MODEL, Limits(m, 1, 1));
  if (ctx == nullptr) return run;
  const int32_t vocab = VocabSize(ctx.get());
  std::vector<int32_t> p = Tokens(ctx.get(), prompt);
  EXPECT_EQ(staticlm_prefill(ctx.get(), p.data(), p.size()), STATICLM_OK);
  for (int i = 0;; ++i) {
    const float* l = staticlm_logits(ctx.get());
    run.logits.insert(run.logits.end(), l, l + vocab);
    if (i == steps) break;
    run.tokens.push_back(Greedy(l, vocab));
    EXPECT_EQ(staticlm_decode(ctx.get(), run.tokens.back()), STATICLM_OK);
  }
  return run;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The batched side: sequence s is prefilled at step start[s] (sequences join late), then every
// step decodes the next greedy token of each started, unfinished sequence — in an order that
// changes from step to step.
std::vector<Generation> Batched(staticlm_context* ctx, const int* start, int steps) {
  const int32_t vocab = VocabSize(ctx);
  std::vector<Generation> runs(kSequences);
  for (int step = 0;; ++step) {
    std::vector<int32_t> seqs, tokens;
    bool waiting = false;  // a sequence has yet to join
    for (int k = 0; k < kSequences; ++k) {
      const int s = step % 2 == 0 ? k : kSequences - 1 - k;
      if (step < start[s]) {
        waiting = true;
        continue;
      }
      if (step == start[s]) {
        std::vector<int32_t> p = Tokens(ctx, kPrompts[s]);
        EXPECT_EQ(staticlm_seq_prefill(ctx, s, p.data(), p.size()), STATICLM_OK);
        const float* l = staticlm_seq_logits(ctx, s);
        runs[s].logits.insert(runs[s].logits.end(), l, l + vocab);
      }
      if (static_cast<int>(runs[s].tokens.size()) == steps) continue;
      runs[s].tokens.push_back(Greedy(staticlm_seq_logits(ctx, s), vocab));
      seqs.push_back(s);
      tokens.push_back(runs[s].tokens.back());
    }
    if (seqs.empty() && !waiting) break;
    if (seqs.empty()) continue;
    EXPECT_EQ(staticlm_decode_batch(ctx, seqs.data(), tokens.data(), seqs.size()), STATICLM_OK)
        << staticlm_last_error(ctx);
    for (int32_t s : seqs) {
      const float* l = staticlm_seq_logits(ctx, s);
      runs[s].logits.insert(runs[s].logits.end(), l, l + vocab);
    }
  }
  return runs;
}

class BatchTest : public testing::TestWithParam<Mode> {};

TEST_P(BatchTest, EachSequenceGetsBitwiseTheLogitsItGetsAlone) {
  const Mode& m = GetParam();
  const int steps = m.window > 0 ? 40 : 10;  // the ring modes go past the window
  // Two threads in the batched context, one alone: the results must not depend on it.
  ContextPtr ctx = CreateContext(STATICLM_DEFAULT_MODEL, Limits(m, kSequences, 2));
  ASSERT_NE(ctx, nullptr);
  const int start[kSequences] = {0, 0, 3, 5};
  std::vector<Generation> batched = Batched(ctx.get(), start, steps);
  for (int s = 0; s < kSequences; ++s) {
    Generation alone = Alone(m, kPrompts[s], steps);
    EXPECT_EQ(batched[s].tokens, alone.tokens) << m.name << ", sequence " << s;
    EXPECT_TRUE(SameBits(batched[s].logits, alone.logits)) << m.name << ", sequence " << s;
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, BatchTest, testing::ValuesIn(kModes),
                         [](const testing::TestParamInfo<Mode>& info) {
                           std::string n = info.param.name;
                           std::replace(n.begin(), n.end(), ' ', '_');
                           return n;
                         });

TEST(BatchSlotTest, AResetSlotTakesANewSequenceWithoutDisturbingTheOthers) {
  const Mode& m = kModes[0];
  ContextPtr ctx = CreateContext(STATICLM_DEFAULT_MODEL, Limits(m, 2, 1));
  ASSERT_NE(ctx, nullptr);
  const int32_t vocab = VocabSize(ctx.get());
  const int steps = 12;
  Generation first = Alone(m, kPrompts[0], steps);
  Generation second = Alone(m, kPrompts[1], 5);
  Generation third = Alone(m, kPrompts[2], 5);

  std::vector<int32_t> p0 = Tokens(ctx.get(), kPrompts[0]);
  std::vector<int32_t> p1 = Tokens(ctx.get(), kPrompts[1]);
  std::vector<int32_t> p2 = Tokens(ctx.get(), kPrompts[2]);
  ASSERT_EQ(staticlm_seq_prefill(ctx.get(), 0, p0.data(), p0.size()), STATICLM_OK);
  ASSERT_EQ(staticlm_seq_prefill(ctx.get(), 1, p1.data(), p1.size()), STATICLM_OK);
  std::vector<int32_t> tokens0, tokens1;
  for (int step = 0; step < steps; ++step) {
    if (step == 5) {  // sequence 1 is done: its slot takes the third prompt
      ASSERT_EQ(staticlm_seq_reset(ctx.get(), 1), STATICLM_OK);
      EXPECT_EQ(staticlm_seq_position(ctx.get(), 1), 0);
      EXPECT_EQ(staticlm_seq_logits(ctx.get(), 1), nullptr);
      ASSERT_EQ(staticlm_seq_prefill(ctx.get(), 1, p2.data(), p2.size()), STATICLM_OK);
      EXPECT_EQ(tokens1, second.tokens);
      tokens1.clear();
    }
    const int32_t seqs[2] = {0, 1};
    const int32_t next[2] = {Greedy(staticlm_seq_logits(ctx.get(), 0), vocab),
                             Greedy(staticlm_seq_logits(ctx.get(), 1), vocab)};
    tokens0.push_back(next[0]);
    tokens1.push_back(next[1]);
    ASSERT_EQ(staticlm_decode_batch(ctx.get(), seqs, next, step < 10 ? 2 : 1), STATICLM_OK);
  }
  EXPECT_EQ(tokens0, first.tokens);
  tokens1.resize(5);
  EXPECT_EQ(tokens1, third.tokens);
  const float* l0 = staticlm_seq_logits(ctx.get(), 0);
  EXPECT_EQ(std::memcmp(l0, first.logits.data() + first.logits.size() - size_t(vocab),
                        sizeof(float) * size_t(vocab)),
            0);
}

TEST(BatchSlotTest, ASnapshotOfOneSequenceRestoresIntoAnother) {
  const Mode& m = kModes[0];
  ContextPtr ctx = CreateContext(STATICLM_DEFAULT_MODEL, Limits(m, 3, 1));
  ASSERT_NE(ctx, nullptr);
  const std::string system = "<|im_start|>system\nYou answer in one short sentence.<|im_end|>\n";
  const std::string question = "<|im_start|>user\nName a river.<|im_end|>\n<|im_start|>assistant\n";
  Generation alone = Alone(m, (system + question).c_str(), 4);

  std::vector<int32_t> prefix = Tokens(ctx.get(), system);
  std::vector<int32_t> all = Tokens(ctx.get(), system + question);
  ASSERT_LT(prefix.size(), all.size());
  ASSERT_TRUE(std::equal(prefix.begin(), prefix.end(), all.begin()));
  std::vector<int32_t> rest(all.begin() + static_cast<long>(prefix.size()), all.end());
  ASSERT_EQ(staticlm_seq_prefill(ctx.get(), 0, prefix.data(), prefix.size()), STATICLM_OK);
  ASSERT_EQ(staticlm_seq_snapshot_save(ctx.get(), 0, 0), STATICLM_OK);
  ASSERT_EQ(staticlm_seq_snapshot_restore(ctx.get(), 0, 2), STATICLM_OK);
  EXPECT_EQ(staticlm_seq_position(ctx.get(), 2), static_cast<int32_t>(prefix.size()));
  ASSERT_EQ(staticlm_seq_prefill(ctx.get(), 2, rest.data(), rest.size()), STATICLM_OK);
  const int32_t vocab = VocabSize(ctx.get());
  EXPECT_EQ(std::memcmp(staticlm_seq_logits(ctx.get(), 2), alone.logits.data(),
                        sizeof(float) * size_t(vocab)),
            0);
  EXPECT_EQ(staticlm_seq_position(ctx.get(), 0), static_cast<int32_t>(prefix.size()));
  EXPECT_EQ(staticlm_seq_position(ctx.get(), 1), 0);
}

TEST(BatchSlotTest, SamplingUsesEachSequencesOwnGenerator) {
  const Mode& m = kModes[0];
  staticlm_sampler sampler;
  staticlm_sampler_default(&sampler);
  auto sample_alone = [&](const char* prompt) {
    ContextPtr ctx = CreateContext(STATICLM_DEFAULT_MODEL, Limits(m, 1, 1));
    staticlm_seed(ctx.get(), 7);
    std::vector<int32_t> p = Tokens(ctx.get(), prompt), out;
    EXPECT_EQ(staticlm_prefill(ctx.get(), p.data(), p.size()), STATICLM_OK);
    for (int i = 0; i < 8; ++i) {
      int32_t t = 0;
      EXPECT_EQ(staticlm_sample(ctx.get(), &sampler, &t), STATICLM_OK);
      out.push_back(t);
      EXPECT_EQ(staticlm_decode(ctx.get(), t), STATICLM_OK);
    }
    return out;
  };
  ContextPtr ctx = CreateContext(STATICLM_DEFAULT_MODEL, Limits(m, 2, 1));
  ASSERT_NE(ctx, nullptr);
  staticlm_seed(ctx.get(), 7);
  std::vector<int32_t> out[2];
  for (int32_t s = 0; s < 2; ++s) {
    std::vector<int32_t> p = Tokens(ctx.get(), kPrompts[s]);
    ASSERT_EQ(staticlm_seq_prefill(ctx.get(), s, p.data(), p.size()), STATICLM_OK);
  }
  for (int i = 0; i < 8; ++i) {
    int32_t next[2] = {0, 0};
    const int32_t seqs[2] = {1, 0};  // sampled in one order, decoded in the other
    for (int32_t s = 0; s < 2; ++s) {
      ASSERT_EQ(staticlm_seq_sample(ctx.get(), s, &sampler, &next[1 - s]), STATICLM_OK);
      out[s].push_back(next[1 - s]);
    }
    ASSERT_EQ(staticlm_decode_batch(ctx.get(), seqs, next, 2), STATICLM_OK);
  }
  EXPECT_EQ(out[0], sample_alone(kPrompts[0]));
  EXPECT_EQ(out[1], sample_alone(kPrompts[1]));
}

TEST(BatchErrorTest, BadBatchesFailBeforeAnythingChanges) {
  Mode m = kModes[0];
  m.max_context = 32;
  ContextPtr ctx = CreateContext(STATICLM_DEFAULT_MODEL, Limits(m, 3, 1));
  ASSERT_NE(ctx, nullptr);
  std::vector<int32_t> p = Tokens(ctx.get(), kPrompts[0]);
  ASSERT_EQ(staticlm_seq_prefill(ctx.get(), 0, p.data(), p.size()), STATICLM_OK);
  ASSERT_EQ(staticlm_seq_prefill(ctx.get(), 1, p.data(), p.size()), STATICLM_OK);
  const int32_t position = staticlm_seq_position(ctx.get(), 0);
  const int32_t tokens[4] = {1, 2, 3, 4};
  const int32_t duplicate[2] = {0, 0};
  const int32_t out_of_range[2] = {0, 3};
  const int32_t negative[2] = {-1, 0};
  const int32_t four[4] = {0, 1, 2, 0};
  const int32_t bad_token[2] = {5, -7};
  const int32_t pair[2] = {0, 1};
  EXPECT_EQ(staticlm_decode_batch(ctx.get(), duplicate, tokens, 2), STATICLM_INVALID_ARGUMENT);
  EXPECT_EQ(staticlm_decode_batch(ctx.get(), out_of_range, tokens, 2), STATICLM_INVALID_ARGUMENT);
  EXPECT_EQ(staticlm_decode_batch(ctx.get(), negative, tokens, 2), STATICLM_INVALID_ARGUMENT);
  EXPECT_EQ(staticlm_decode_batch(ctx.get(), four, tokens, 4), STATICLM_INVALID_ARGUMENT);
  EXPECT_EQ(staticlm_decode_batch(ctx.get(), pair, tokens, 0), STATICLM_INVALID_ARGUMENT);
  EXPECT_EQ(staticlm_decode_batch(ctx.get(), pair, bad_token, 2), STATICLM_INVALID_ARGUMENT);
  EXPECT_EQ(staticlm_seq_prefill(ctx.get(), 3, tokens, 1), STATICLM_INVALID_ARGUMENT);
  EXPECT_EQ(staticlm_seq_reset(ctx.get(), 3), STATICLM_INVALID_ARGUMENT);
  EXPECT_EQ(staticlm_seq_position(ctx.get(), 3), -1);
  EXPECT_EQ(staticlm_seq_logits(ctx.get(), -1), nullptr);
  EXPECT_EQ(staticlm_seq_position(ctx.get(), 0), position);
  EXPECT_EQ(staticlm_seq_position(ctx.get(), 1), position);
  // Sequence 1 at the end of its context: the whole batch is refused, sequence 0 unchanged.
  std::vector<int32_t> fill(static_cast<size_t>(32 - position), 1);
  ASSERT_EQ(staticlm_seq_prefill(ctx.get(), 1, fill.data(), fill.size()), STATICLM_OK);
  EXPECT_EQ(staticlm_decode_batch(ctx.get(), pair, tokens, 2), STATICLM_CONTEXT_FULL);
  EXPECT_EQ(staticlm_seq_position(ctx.get(), 0), position);
  EXPECT_EQ(staticlm_decode_batch(ctx.get(), pair, tokens, 1), STATICLM_OK);  // 0 alone is fine
}

TEST(BatchErrorTest, TooManySequencesIsAnInitError) {
  staticlm_limits l = Limits(kModes[0], 65, 1);
  staticlm_context* raw = nullptr;
  char error[256] = {0};
  EXPECT_EQ(staticlm_create(STATICLM_DEFAULT_MODEL, &l, &raw, error, sizeof(error)),
            STATICLM_INVALID_ARGUMENT);
  EXPECT_EQ(raw, nullptr);
  EXPECT_NE(std::string(error).find("batch"), std::string::npos) << error;
}

}  // namespace
