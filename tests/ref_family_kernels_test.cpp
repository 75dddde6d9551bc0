// The reference kernels the families added (backends/cpu/reference_kernels.h): RoPE with
// frequency factors and a cos/sin scale (Llama 3's rope_freqs, Phi-3's longrope; a sink cache's
// query turn with them), and the bias
// add (Qwen 2), each against the plain formula written out here; and the CPU's cached RoPE
// table (backends/cpu/rope_angles.h), which must give the reference's results bit for bit.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/reference_kernels.h"
#include "backends/cpu/rope_angles.h"

namespace staticlm::cpu {
namespace {

std::vector<float> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(n);
  for (float& v : x) v = u(rng);
  return x;
}

// The rotation by its definition, in double: pair i of a head's first rd elements (partial
// RoPE; rd = d: all of them), (a, b), becomes scale · (a cos θ − b sin θ, a sin θ + b cos θ),
// θ = position · base^(−2i/rd) / factor_i; the elements from rd on stay as they are.
std::vector<double> Rotated(const std::vector<float>& x, int64_t rows, int64_t heads, int64_t d,
                            int32_t first, double base, const std::vector<float>& factors,
                            double scale, bool halves, int64_t rd = 0) {
  if (rd == 0) rd = d;
  std::vector<double> y(x.begin(), x.end());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t i = 0; i < rd / 2; ++i) {
        const double theta = static_cast<double>(first + r) * std::pow(base, -2.0 * i / rd) /
                             (factors.empty() ? 1.0 : factors[static_cast<size_t>(i)]);
        const int64_t base_index = (r * heads + h) * d;
        const int64_t ia = base_index + (halves ? i : 2 * i);
        const int64_t ib = ia + (halves ? rd / 2 : 1);
        const double a = x[static_cast<size_t>(ia)], b = x[static_cast<size_t>(ib)];
        y[static_cast<size_t>(ia)] = scale * (a * std::cos(theta) - b * std::sin(theta));
        y[static_cast<size_t>(ib)] = scale * (a * std::sin(theta) + b * std::cos(theta));
      }
    }
  }
  return y;
}

struct RopeCase {
  bool halves;
  bool factors;
  float scale;
  int64_t rope_dims = 16;  // of the head's 16: partial RoPE below
};

class RopeScaledTest : public ::testing::TestWithParam<RopeCase> {};

TEST_P(RopeScaledTest, MatchesTheRotationFormula) {
  const RopeCase c = GetParam();
  const int64_t rows = 5, heads = 3, d = 16;
  const int32_t first = 37;
  std::vector<float> factors;
  if (c.factors) {
    for (int i = 0; i < c.rope_dims / 2; ++i) {
      factors.push_back(1.0f + 3.5f * static_cast<float>(i));
    }
  }
  std::vector<float> x = Random(static_cast<size_t>(rows * heads * d), 5);
  const std::vector<double> expected =
      Rotated(x, rows, heads, d, first, 10000.0, factors, c.scale, c.halves, c.rope_dims);
  ref::RopeScaled(x.data(), rows, heads, d, c.rope_dims, first, 10000.0f,
                  c.factors ? factors.data() : nullptr, c.scale, c.halves);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], expected[i], 2e-6) << i;
}

// The last three turn 12 of 16 elements (partial RoPE, Phi-4-mini's 0.75): their pairs and
// frequencies are a 12-wide head's, and the last 4 elements pass through unchanged.
INSTANTIATE_TEST_SUITE_P(Forms, RopeScaledTest,
                         ::testing::Values(RopeCase{false, true, 1.0f}, RopeCase{true, true, 1.0f},
                                           RopeCase{true, true, 1.1832f},
                                           RopeCase{false, false, 0.75f},
                                           RopeCase{true, false, 1.0f, 12},
                                           RopeCase{true, true, 1.1832f, 12},
                                           RopeCase{false, true, 1.0f, 12}));

// The factors change the angle: a factor of f turns pair i as far at position f · p as no
// factor at position p. A kernel that ignored them would fail this.
TEST(RopeScaledTest, AFactorSlowsItsPair) {
  const int64_t d = 8;
  std::vector<float> factors = {1.0f, 4.0f, 1.0f, 1.0f};
  std::vector<float> x = Random(static_cast<size_t>(d), 9), slowed = x, plain = x;
  ref::RopeScaled(slowed.data(), 1, 1, d, d, 40, 100.0f, factors.data(), 1.0f, false);
  ref::RopeScaled(plain.data(), 1, 1, d, d, 10, 100.0f, nullptr, 1.0f, false);
  EXPECT_NEAR(slowed[2], plain[2], 1e-5);  // pair 1 at position 40 / 4 = 10
  EXPECT_NEAR(slowed[3], plain[3], 1e-5);
  EXPECT_GT(std::fabs(slowed[0] - plain[0]), 1e-2);  // pair 0 is at position 40 vs 10
}

// A sink cache's query turn (ref::RotateQuery) with frequency factors against the formula: a
// turn by delta positions (negative: back to the query's place in the cache) by the factored
// frequencies, the keys' own, pairing elements as the model's RoPE does (adjacent or halves).
TEST(RopeScaledTest, SinkQueryTurnTakesTheFactorsAndThePairing) {
  const int64_t d = 16;
  std::vector<float> factors;
  for (int i = 0; i < d / 2; ++i) factors.push_back(1.0f + 5.0f * static_cast<float>(i));
  const std::vector<float> q = Random(static_cast<size_t>(d), 11);
  for (bool halves : {false, true}) {
    for (int32_t rope_dims : {0, 10}) {  // the whole head, and partial RoPE (10 of 16)
      OpParams p;
      p.head_dim = d;
      p.rope_dims = rope_dims;
      p.rope_base = 10000.0f;
      p.rope_halves = halves;
      const std::vector<float> f(factors.begin(), factors.begin() + RopeDims(p) / 2);
      for (int32_t delta : {-1, -37, -4000}) {
        std::vector<float> got(static_cast<size_t>(d));
        ref::RotateQuery(q.data(), p, delta, f.data(), got.data());
        const std::vector<double> expected =
            Rotated(q, 1, 1, d, delta, 10000.0, f, 1.0, halves, RopeDims(p));
        for (size_t i = 0; i < got.size(); ++i) {
          EXPECT_NEAR(got[i], expected[i], 2e-6) << delta << " halves " << halves << " " << i;
        }
      }
    }
  }
}

// The turn by delta is the keys' RoPE by delta: rotating a query at position p by delta equals
// ref::Rope / ref::RopeHalves at position p + delta, bit for bit when p is 0 (the same angles).
TEST(RopeScaledTest, SinkQueryTurnIsTheKeysRope) {
  const int64_t d = 32;
  const std::vector<float> q = Random(static_cast<size_t>(d), 5);
  for (bool halves : {false, true}) {
    std::vector<float> got(static_cast<size_t>(d)), want = q;
    OpParams p;
    p.head_dim = d;
    p.rope_base = 10000.0f;
    p.rope_halves = halves;
    ref::RotateQuery(q.data(), p, 37, nullptr, got.data());
    (halves ? ref::RopeHalves : ref::Rope)(want.data(), 1, 1, d, 37, 10000.0f);
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << halves;
  }
}

// With no factors and a scale of 1 it is ref::Rope / ref::RopeHalves exactly.
TEST(RopeScaledTest, PlainFormEqualsRopeBitForBit) {
  const int64_t rows = 4, heads = 2, d = 32;
  for (bool halves : {false, true}) {
    std::vector<float> a = Random(static_cast<size_t>(rows * heads * d), 3), b = a;
    ref::RopeScaled(a.data(), rows, heads, d, d, 1000, 500000.0f, nullptr, 1.0f, halves);
    (halves ? ref::RopeHalves : ref::Rope)(b.data(), rows, heads, d, 1000, 500000.0f);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << halves;
  }
}

// The CPU backend's cached table with factors and a scale rotates as the reference does, bit for
// bit, and is rebuilt when the factors change; over the whole head and over part of it.
TEST(RopeScaledTest, CachedAnglesEqualTheReference) {
  const int64_t rows = 6, heads = 2, d = 16;
  RopeAngles angles;
  ASSERT_TRUE(angles.Init(rows, d).ok());
  std::vector<float> short_factors(d / 2, 1.5f), long_factors(d / 2, 9.0f);
  for (int64_t rd : {d, int64_t{12}}) {
    for (const std::vector<float>* factors : {&short_factors, &long_factors}) {
      for (bool halves : {false, true}) {
        std::vector<float> a = Random(static_cast<size_t>(rows * heads * d), 11), b = a;
        const float* table = angles.Get(21, rows, rd, 10000.0f, factors->data(), 1.25f);
        ASSERT_NE(table, nullptr);
        (halves ? RopeAngles::ApplyHalves : RopeAngles::Apply)(a.data(), rows, heads, d, rd, table);
        ref::RopeScaled(b.data(), rows, heads, d, rd, 21, 10000.0f, factors->data(), 1.25f, halves);
        EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << halves << rd;
      }
    }
  }
}

TEST(AddBiasTest, AddsTheBiasToEveryRow) {
  const int64_t rows = 3, n = 7;
  std::vector<float> x = Random(static_cast<size_t>(rows * n), 1), bias = Random(n, 2);
  const std::vector<float> before = x;
  ref::AddBias(x.data(), bias.data(), rows, n);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < n; ++i) {
      const size_t at = static_cast<size_t>(r * n + i);
      EXPECT_EQ(x[at], before[at] + bias[static_cast<size_t>(i)]);
    }
  }
}

}  // namespace
}  // namespace staticlm::cpu
