#include "runtime/sampler/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace staticlm {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Plain sampling: no filters, no penalty, temperature 1 — the softmax of the logits.
SamplerParams Plain() {
  SamplerParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  return p;
}

SamplerParams Greedy() {
  SamplerParams p = Plain();
  p.temperature = 0.0f;
  return p;
}

// Logits whose softmax is exactly `probs` (up to rounding).
std::vector<float> LogitsOf(const std::vector<double>& probs) {
  std::vector<float> logits;
  for (double p : probs) logits.push_back(static_cast<float>(std::log(p)));
  return logits;
}

class SamplerTest : public ::testing::Test {
 protected:
  void InitFor(const std::vector<float>& logits) {
    ASSERT_TRUE(sampler_.Init(static_cast<int32_t>(logits.size())).ok());
  }

  int32_t SampleOnce(const std::vector<float>& logits, const SamplerParams& params,
                     const std::vector<int32_t>& history = {}) {
    int32_t token = -1;
    Status s = sampler_.Sample(logits.data(), history.data(), history.size(), params, &token);
    EXPECT_TRUE(s.ok()) << s.message();
    return token;
  }

  std::vector<int> Counts(const std::vector<float>& logits, const SamplerParams& params,
                          int draws) {
    std::vector<int> counts(logits.size(), 0);
    for (int i = 0; i < draws; ++i) ++counts[SampleOnce(logits, params)];
    return counts;
  }

  Sampler sampler_;
};

std::vector<float> RandomLogits(size_t n, uint32_t seed, float scale = 4.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> logits(n);
  for (float& l : logits) l = normal(gen);
  return logits;
}

int32_t ReferenceArgmax(const std::vector<float>& logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

TEST_F(SamplerTest, GreedyIsArgmaxWithTiesToLowestId) {
  std::vector<float> logits = {1.0f, 3.0f, -2.0f, 3.0f, 2.5f};
  InitFor(logits);
  EXPECT_EQ(SampleOnce(logits, Greedy()), 1);
  std::vector<float> all_equal(7, 0.25f);
  EXPECT_EQ(SampleOnce(all_equal, Greedy()), 0);
  std::vector<float> masked = {kNegInf, kNegInf, -5.0f, -5.0f, kNegInf, -6.0f, kNegInf};
  EXPECT_EQ(SampleOnce(masked, Greedy()), 2);
}

TEST_F(SamplerTest, GreedyMatchesArgmaxOnRandomLogits) {
  ASSERT_TRUE(sampler_.Init(1000).ok());
  for (uint32_t seed = 0; seed < 50; ++seed) {
    std::vector<float> logits = RandomLogits(1000, seed);
    EXPECT_EQ(SampleOnce(logits, Greedy()), ReferenceArgmax(logits)) << "seed " << seed;
  }
}

TEST_F(SamplerTest, TopKOneIsGreedy) {
  ASSERT_TRUE(sampler_.Init(500).ok());
  SamplerParams k1 = Plain();
  k1.top_k = 1;
  k1.temperature = 1.5f;
  for (uint32_t seed = 0; seed < 50; ++seed) {
    std::vector<float> logits = RandomLogits(500, seed);
    // Plant a tie for the maximum at a higher id than the first maximum.
    int32_t best = ReferenceArgmax(logits);
    logits[(best + 123) % 500] = logits[best];
    EXPECT_EQ(SampleOnce(logits, k1), SampleOnce(logits, Greedy())) << "seed " << seed;
  }
}

TEST_F(SamplerTest, LogitsAreNotModified) {
  std::vector<float> logits = RandomLogits(300, 7);
  std::vector<float> copy = logits;
  ASSERT_TRUE(sampler_.Init(300).ok());
  SamplerParams p;  // defaults: every filter on
  p.repetition_penalty = 1.3f;
  std::vector<int32_t> history = {1, 2, 3, 2, 299};
  for (int i = 0; i < 20; ++i) SampleOnce(logits, p, history);
  EXPECT_EQ(logits, copy);
}

TEST_F(SamplerTest, SameSeedSameSequenceDifferentSeedDifferent) {
  std::vector<float> logits = RandomLogits(2000, 3, 1.0f);
  SamplerParams p = Plain();
  ASSERT_TRUE(sampler_.Init(2000).ok());
  auto draw_sequence = [&](uint64_t seed) {
    sampler_.Seed(seed);
    std::vector<int32_t> tokens;
    for (int i = 0; i < 1000; ++i) tokens.push_back(SampleOnce(logits, p));
    return tokens;
  };
  std::vector<int32_t> a = draw_sequence(42);
  std::vector<int32_t> b = draw_sequence(42);
  std::vector<int32_t> c = draw_sequence(43);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  // A flat-ish distribution over 2000 tokens: the draws must actually vary.
  EXPECT_GT(std::count_if(a.begin(), a.end(), [&](int32_t t) { return t != a[0]; }), 900);
  // A fresh sampler starts from seed 0, exactly like Seed(0).
  Sampler fresh;
  ASSERT_TRUE(fresh.Init(2000).ok());
  std::vector<int32_t> d = draw_sequence(0);
  for (int i = 0; i < 1000; ++i) {
    int32_t token = -1;
    ASSERT_TRUE(fresh.Sample(logits.data(), nullptr, 0, p, &token).ok());
    ASSERT_EQ(token, d[i]) << "draw " << i;
  }
}

// Pearson's chi-square of observed counts against expected probabilities.
double ChiSquare(const std::vector<int>& counts, const std::vector<double>& probs, int draws) {
  double chi2 = 0.0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double expected = probs[i] * draws;
    if (expected == 0.0) {
      EXPECT_EQ(counts[i], 0) << "token " << i << " has probability 0";
      continue;
    }
    chi2 += (counts[i] - expected) * (counts[i] - expected) / expected;
  }
  return chi2;
}

std::vector<double> Softmax(const std::vector<float>& logits, double temperature) {
  double max = *std::max_element(logits.begin(), logits.end());
  std::vector<double> p;
  double sum = 0.0;
  for (float l : logits) {
    p.push_back(std::exp((l - max) / temperature));
    sum += p.back();
  }
  for (double& x : p) x /= sum;
  return p;
}

// 5 categories → 4 degrees of freedom; P(chi2 > 18.47) = 0.001 under the right distribution.
// A sampler off by a few percent in any category (N = 200000) lands far above it.
constexpr double kChiSquareCritical4Df = 18.47;

TEST_F(SamplerTest, FrequenciesMatchSoftmax) {
  std::vector<float> logits = {0.0f, 1.0f, 2.0f, 0.5f, -1.0f};
  InitFor(logits);
  sampler_.Seed(12345);
  constexpr int kDraws = 200000;
  EXPECT_LT(ChiSquare(Counts(logits, Plain(), kDraws), Softmax(logits, 1.0), kDraws),
            kChiSquareCritical4Df);
}

TEST_F(SamplerTest, FrequenciesMatchTemperatureScaledSoftmax) {
  std::vector<float> logits = {0.0f, 1.0f, 2.0f, 0.5f, -1.0f};
  InitFor(logits);
  sampler_.Seed(777);
  SamplerParams p = Plain();
  p.temperature = 2.5f;
  constexpr int kDraws = 200000;
  std::vector<int> counts = Counts(logits, p, kDraws);
  EXPECT_LT(ChiSquare(counts, Softmax(logits, 2.5), kDraws), kChiSquareCritical4Df);
  // The same counts are far from the untempered softmax: the test can tell them apart.
  EXPECT_GT(ChiSquare(counts, Softmax(logits, 1.0), kDraws), 1000.0);
}

TEST_F(SamplerTest, TopKKeepsExactlyTheKBestAndRenormalises) {
  std::vector<float> logits = {0.3f, 2.0f, -1.0f, 1.5f, 1.9f, 0.0f, 1.0f, -0.5f};
  InitFor(logits);
  SamplerParams p = Plain();
  p.top_k = 3;  // tokens 1, 4, 3
  constexpr int kDraws = 60000;
  std::vector<int> counts = Counts(logits, p, kDraws);
  std::vector<double> expected = Softmax({2.0f, 1.9f, 1.5f}, 1.0);
  std::vector<double> probs(logits.size(), 0.0);
  probs[1] = expected[0];
  probs[4] = expected[1];
  probs[3] = expected[2];
  // 3 kept categories → 2 degrees of freedom; P(chi2 > 13.82) = 0.001.
  EXPECT_LT(ChiSquare(counts, probs, kDraws), 13.82);
}

TEST_F(SamplerTest, TopKTiesGoToLowerIds) {
  std::vector<float> logits(10, 1.0f);
  InitFor(logits);
  SamplerParams p = Plain();
  p.top_k = 3;
  std::vector<int> counts = Counts(logits, p, 3000);
  for (int t = 0; t < 3; ++t) EXPECT_GT(counts[t], 800) << t;
  for (int t = 3; t < 10; ++t) EXPECT_EQ(counts[t], 0) << t;
}

TEST_F(SamplerTest, TopKNeverReturnsATokenOutsideTheK) {
  ASSERT_TRUE(sampler_.Init(1000).ok());
  SamplerParams p = Plain();
  p.top_k = 5;
  p.temperature = 3.0f;  // flatten, so excluded tokens would show up if they could
  for (uint32_t seed = 0; seed < 20; ++seed) {
    std::vector<float> logits = RandomLogits(1000, seed, 0.5f);
    std::vector<float> sorted = logits;
    std::sort(sorted.begin(), sorted.end(), std::greater<float>());
    const float fifth = sorted[4];
    for (int i = 0; i < 100; ++i) {
      int32_t t = SampleOnce(logits, p);
      ASSERT_GE(logits[t], fifth) << "seed " << seed;
    }
  }
}

// probs 0.5, 0.3, 0.15, 0.05: mass before each token is 0, 0.5, 0.8, 0.95.
TEST_F(SamplerTest, TopPKeepsTheSmallestPrefixReachingP) {
  std::vector<float> logits = LogitsOf({0.15, 0.5, 0.05, 0.3});  // shuffled ids
  InitFor(logits);
  SamplerParams p = Plain();
  p.top_p = 0.7f;  // keeps 0.5 and 0.3 (ids 1, 3)
  std::vector<int> counts = Counts(logits, p, 20000);
  EXPECT_EQ(counts[0], 0);
  EXPECT_EQ(counts[2], 0);
  EXPECT_NEAR(counts[1] / 20000.0, 0.5 / 0.8, 0.02);
  EXPECT_NEAR(counts[3] / 20000.0, 0.3 / 0.8, 0.02);

  p.top_p = 0.85f;  // adds 0.15 (id 0), still excludes id 2
  counts = Counts(logits, p, 20000);
  EXPECT_EQ(counts[2], 0);
  EXPECT_GT(counts[0], 0);

  p.top_p = 0.4f;  // only the best
  counts = Counts(logits, p, 2000);
  EXPECT_EQ(counts[1], 2000);
}

// Top-p alone avoids sorting the whole vocabulary by growing a sorted prefix until it holds
// the nucleus. With one -inf logit, top_k = V - 1 drops nothing yet takes the plain
// sort-then-cut path, so the two must draw the same tokens from the same seed — for a peaked
// distribution (nucleus inside the first prefix), a medium one (several growth steps) and a
// flat one (nucleus spanning most of the vocabulary: the full sort).
TEST_F(SamplerTest, TopPAloneMatchesTopPAfterAFullTopK) {
  constexpr int32_t kVocab = 5000;
  ASSERT_TRUE(sampler_.Init(kVocab).ok());
  for (float scale : {8.0f, 2.5f, 0.05f}) {
    std::vector<float> logits = RandomLogits(kVocab, 99, scale);
    logits[1234] = kNegInf;
    SamplerParams nucleus = Plain();
    nucleus.top_p = 0.9f;
    SamplerParams full = nucleus;
    full.top_k = kVocab - 1;
    std::vector<int32_t> a, b;
    std::vector<bool> seen(kVocab, false);
    sampler_.Seed(5);
    for (int i = 0; i < 200; ++i) a.push_back(SampleOnce(logits, nucleus));
    sampler_.Seed(5);
    for (int i = 0; i < 200; ++i) b.push_back(SampleOnce(logits, full));
    EXPECT_EQ(a, b) << "scale " << scale;
    for (int32_t t : a) seen[t] = true;
    EXPECT_GT(std::count(seen.begin(), seen.end(), true), 5) << "scale " << scale;
  }
}

TEST_F(SamplerTest, MinPDropsTokensBelowTheFractionOfTheBest) {
  std::vector<float> logits = LogitsOf({0.05, 0.3, 0.5, 0.15});
  InitFor(logits);
  SamplerParams p = Plain();
  p.min_p = 0.2f;  // threshold 0.1: drops 0.05 (id 0)
  std::vector<int> counts = Counts(logits, p, 20000);
  EXPECT_EQ(counts[0], 0);
  EXPECT_GT(counts[3], 0);
  EXPECT_NEAR(counts[2] / 20000.0, 0.5 / 0.95, 0.02);

  p.min_p = 0.5f;  // threshold 0.25: keeps 0.5 and 0.3 (ids 2, 1)
  counts = Counts(logits, p, 20000);
  EXPECT_EQ(counts[0], 0);
  EXPECT_EQ(counts[3], 0);
  EXPECT_NEAR(counts[1] / 20000.0, 0.3 / 0.8, 0.02);
}

// Top-p sees the distribution renormalised over top-k's survivors: probs 0.4, 0.35, 0.25 with
// top_k = 2 become 0.533, 0.467, so top_p = 0.5 keeps only the best. Applied the other way
// round, top_p = 0.5 would keep the second token too.
TEST_F(SamplerTest, TopPRunsAfterTopK) {
  std::vector<float> logits = LogitsOf({0.4, 0.35, 0.25});
  InitFor(logits);
  SamplerParams p = Plain();
  p.top_p = 0.5f;
  std::vector<int> without_k = Counts(logits, p, 5000);
  EXPECT_GT(without_k[1], 0);
  p.top_k = 2;
  std::vector<int> with_k = Counts(logits, p, 5000);
  EXPECT_EQ(with_k[0], 5000);
}

// Temperature reshapes the distribution before top-p: probs 0.5, 0.3, 0.2 at T = 1 become
// 0.658, 0.237, 0.105 at T = 0.5, so top_p = 0.6 keeps two tokens at T = 1 and one at T = 0.5.
TEST_F(SamplerTest, TemperatureRunsBeforeTopP) {
  std::vector<float> logits = LogitsOf({0.5, 0.3, 0.2});
  InitFor(logits);
  SamplerParams p = Plain();
  p.top_p = 0.6f;
  EXPECT_GT(Counts(logits, p, 5000)[1], 0);
  p.temperature = 0.5f;
  EXPECT_EQ(Counts(logits, p, 5000)[0], 5000);
}

TEST_F(SamplerTest, RepetitionPenaltyDividesPositiveLogits) {
  std::vector<float> logits = {2.0f, 1.5f, -1.0f, -1.2f};
  InitFor(logits);
  SamplerParams p = Greedy();
  p.repetition_penalty = 1.5f;  // 2.0 / 1.5 = 1.33 < 1.5
  EXPECT_EQ(SampleOnce(logits, p, {0}), 1);
  p.repetition_penalty = 1.2f;  // 2.0 / 1.2 = 1.67 > 1.5
  EXPECT_EQ(SampleOnce(logits, p, {0}), 0);
  p.repetition_penalty = 0.5f;  // a penalty below 1 rewards: 1.5 / 0.5 = 3 > 2
  EXPECT_EQ(SampleOnce(logits, p, {1}), 1);
}

TEST_F(SamplerTest, RepetitionPenaltyMultipliesNegativeLogits) {
  std::vector<float> logits = {-1.0f, -1.1f, -3.0f};
  InitFor(logits);
  SamplerParams p = Greedy();
  p.repetition_penalty = 1.2f;  // -1.0 · 1.2 = -1.2 < -1.1
  EXPECT_EQ(SampleOnce(logits, p, {0}), 1);
  p.repetition_penalty = 1.05f;  // -1.05 > -1.1
  EXPECT_EQ(SampleOnce(logits, p, {0}), 0);
}

TEST_F(SamplerTest, RepetitionPenaltyAppliesOncePerDistinctToken) {
  std::vector<float> logits = {2.0f, 1.5f};
  InitFor(logits);
  SamplerParams p = Greedy();
  p.repetition_penalty = 1.2f;  // once: 1.67 > 1.5; three times it would be 1.16 < 1.5
  EXPECT_EQ(SampleOnce(logits, p, {0, 0, 0}), 0);
  // The seen-token bitmap is cleared between calls: the next call penalises again, once.
  EXPECT_EQ(SampleOnce(logits, p, {0, 0}), 0);
  p.repetition_penalty = 1.5f;
  EXPECT_EQ(SampleOnce(logits, p, {0, 0}), 1);
}

TEST_F(SamplerTest, RepetitionWindowLooksOnlyAtRecentTokens) {
  std::vector<float> logits = {2.0f, 1.5f, 0.0f};
  InitFor(logits);
  SamplerParams p = Greedy();
  p.repetition_penalty = 1.5f;
  p.repetition_window = 3;
  EXPECT_EQ(SampleOnce(logits, p, {0, 2, 2, 2}), 0);  // token 0 is outside the window
  EXPECT_EQ(SampleOnce(logits, p, {2, 2, 0, 2}), 1);  // inside
  p.repetition_window = 0;                            // the whole history
  EXPECT_EQ(SampleOnce(logits, p, {0, 2, 2, 2}), 1);
}

TEST_F(SamplerTest, MaskedTokensAreNeverSampled) {
  std::vector<float> logits = {kNegInf, 0.0f, kNegInf, 0.0f, kNegInf};
  InitFor(logits);
  SamplerParams p = Plain();
  p.top_k = 4;  // more than the two finite logits
  std::vector<int> counts = Counts(logits, p, 4000);
  EXPECT_EQ(counts[0] + counts[2] + counts[4], 0);
  EXPECT_GT(counts[1], 1500);
  EXPECT_GT(counts[3], 1500);
}

TEST_F(SamplerTest, RejectsInvalidParams) {
  std::vector<float> logits = {0.0f, 1.0f, 2.0f};
  InitFor(logits);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<SamplerParams> bad;
  auto with = [&](auto edit) {
    SamplerParams p;
    edit(p);
    bad.push_back(p);
  };
  with([](SamplerParams& p) { p.temperature = -0.1f; });
  with([&](SamplerParams& p) { p.temperature = nan; });
  with([&](SamplerParams& p) { p.temperature = inf; });
  with([](SamplerParams& p) { p.top_k = -1; });
  with([](SamplerParams& p) { p.top_p = 0.0f; });
  with([](SamplerParams& p) { p.top_p = 1.01f; });
  with([&](SamplerParams& p) { p.top_p = nan; });
  with([](SamplerParams& p) { p.min_p = -0.01f; });
  with([](SamplerParams& p) { p.min_p = 1.5f; });
  with([&](SamplerParams& p) { p.min_p = nan; });
  with([](SamplerParams& p) { p.repetition_penalty = 0.0f; });
  with([](SamplerParams& p) { p.repetition_penalty = -1.0f; });
  with([&](SamplerParams& p) { p.repetition_penalty = nan; });
  with([](SamplerParams& p) { p.repetition_window = -1; });
  for (size_t i = 0; i < bad.size(); ++i) {
    int32_t token = -7;
    Status s = sampler_.Sample(logits.data(), nullptr, 0, bad[i], &token);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << "case " << i;
    EXPECT_EQ(token, -7) << "case " << i;
  }
  // The edges of each range are valid.
  SamplerParams edge;
  edge.temperature = 0.0f;
  edge.top_p = 1.0f;
  edge.min_p = 1.0f;
  int32_t token = -1;
  EXPECT_TRUE(sampler_.Sample(logits.data(), nullptr, 0, edge, &token).ok());
  edge.temperature = 1.0f;
  edge.min_p = 0.0f;
  EXPECT_TRUE(sampler_.Sample(logits.data(), nullptr, 0, edge, &token).ok());
}

TEST_F(SamplerTest, RejectsBadInputs) {
  std::vector<float> logits = {0.0f, 1.0f, 2.0f};
  int32_t token = -1;
  Sampler uninitialised;
  EXPECT_EQ(uninitialised.Sample(logits.data(), nullptr, 0, Plain(), &token).code(),
            StatusCode::kInvalidState);
  EXPECT_EQ(sampler_.Init(0).code(), StatusCode::kInvalidArgument);
  InitFor(logits);
  EXPECT_EQ(sampler_.Sample(nullptr, nullptr, 0, Plain(), &token).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(sampler_.Sample(logits.data(), nullptr, 0, Plain(), nullptr).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(sampler_.Sample(logits.data(), nullptr, 2, Plain(), &token).code(),
            StatusCode::kInvalidArgument);
  std::vector<float> with_nan = {0.0f, std::numeric_limits<float>::quiet_NaN(), 1.0f};
  EXPECT_EQ(sampler_.Sample(with_nan.data(), nullptr, 0, Plain(), &token).code(),
            StatusCode::kInvalidArgument);
  std::vector<float> all_masked(3, kNegInf);
  EXPECT_EQ(sampler_.Sample(all_masked.data(), nullptr, 0, Plain(), &token).code(),
            StatusCode::kInvalidArgument);
  SamplerParams penalised = Plain();
  penalised.repetition_penalty = 1.1f;
  std::vector<int32_t> bad_history = {0, 3};
  EXPECT_EQ(sampler_.Sample(logits.data(), bad_history.data(), 2, penalised, &token).code(),
            StatusCode::kInvalidArgument);
}

TEST(SamplerScratch, ScratchBytesCoversEveryArray) {
  EXPECT_EQ(Sampler::ScratchBytes(49152), 49152u / 64 * 8 + 49152u * 12);
  EXPECT_EQ(Sampler::ScratchBytes(0), 0u);
}

}  // namespace
}  // namespace staticlm
