// The SIMD element-wise kernels (RMSNorm, SiLU-multiply, GELU-multiply, softmax; AVX2 and NEON)
// against the reference ones on random data of awkward sizes and extreme values: only the order of
// float additions and the last bits of e^x may differ.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/fast_elementwise.h"
#include "backends/cpu/reference_kernels.h"
#include "backends/cpu/rope_angles.h"

namespace staticlm::cpu {
namespace {

const int64_t kSizes[] = {1, 3, 7, 8, 9, 16, 31, 33, 64, 100, 576, 1537};

std::vector<float> Random(size_t n, float spread, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, spread);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Each ISA's kernels where this build has them and this CPU runs them.
class FastElementwiseTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    CpuFeatures f = DetectCpuFeatures();
    const bool avx2 = GetParam() == "avx2";
    kernels_ = avx2 ? Avx2Elementwise() : NeonElementwise();
    if (kernels_.rms_norm == nullptr) GTEST_SKIP() << "no " << GetParam() << " kernels here";
    if (avx2 ? !(f.avx2 && f.fma) : !f.neon) GTEST_SKIP() << "this CPU lacks " << GetParam();
  }
  ElementwiseKernels kernels_{};
};

INSTANTIATE_TEST_SUITE_P(Isas, FastElementwiseTest, ::testing::Values("avx2", "neon"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

TEST_P(FastElementwiseTest, RmsNormMatchesReference) {
  for (int64_t n : kSizes) {
    const int64_t rows = 3;
    auto x = Random(size_t(rows * n), 2.0f, 1), w = Random(size_t(n), 1.0f, 2);
    std::vector<float> expected(x.size()), got(x.size(), -1.0f);
    ref::RmsNorm(x.data(), w.data(), rows, n, 1e-5f, expected.data());
    kernels_.rms_norm(x.data(), w.data(), rows, n, 1e-5f, got.data());
    for (size_t i = 0; i < x.size(); ++i) {
      // The mean square differs by reassociation (n terms): a few ulp of each output.
      ASSERT_NEAR(got[i], expected[i], 1e-6f * (std::fabs(expected[i]) + 1e-3f))
          << "n " << n << " at " << i;
    }
  }
}

TEST_P(FastElementwiseTest, SiluMulMatchesReferenceOverTheWholeRange) {
  for (int64_t n : kSizes) {
    auto gate = Random(size_t(n), 30.0f, 3), up = Random(size_t(n), 1.0f, 4);
    gate[0] = -100.0f;  // e^100 overflows in f32: silu must still be (almost) zero
    if (n > 1) gate[1] = 100.0f;
    if (n > 2) gate[2] = 0.0f;
    std::vector<float> expected = gate, got = gate;
    ref::SiluMul(expected.data(), up.data(), n);
    kernels_.silu_mul(got.data(), up.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_NEAR(got[i], expected[i], 4e-7f * std::fabs(expected[i]) + 1e-30f)
          << "gate " << gate[size_t(i)] << " n " << n;
    }
  }
}

// x · up · (1 + tanh(√(2/π) (x + 0.044715 x³))) / 2 in double from the f32 inputs.
double ExactGeluMul(float x, float up) {
  const double xd = x, u = 0.7978845608028654 * (xd + 0.044715 * xd * xd * xd);
  return 0.5 * xd * (1.0 + std::tanh(u)) * up;
}

// Where 1 + tanh(u) cancels (x ≪ 0) neither form is accurate relative to its tiny result, so
// both are held to the exact value within a bound relative to |x · up|, the scale of their
// roundings. The reference is checked too: it is the oracle the plan's tests lean on.
TEST_P(FastElementwiseTest, GeluMulMatchesTheExactValueOverTheWholeRange) {
  ASSERT_NE(SelectElementwise(DetectCpuFeatures(), false).gelu_mul, nullptr);
  ASSERT_NE(SelectElementwise(DetectCpuFeatures(), true).gelu_mul, nullptr);
  if (kernels_.gelu_mul == nullptr) GTEST_SKIP() << "no " << GetParam() << " GELU (reference)";
  for (int64_t n : kSizes) {
    for (float spread : {1.0f, 6.0f}) {
      auto gate = Random(size_t(n), spread, 6), up = Random(size_t(n), 1.0f, 7);
      gate[0] = -100.0f;  // e^(−2u) far beyond f32: the result is (almost) zero
      if (n > 1) gate[1] = 100.0f;
      if (n > 2) gate[2] = 0.0f;
      if (n > 3) gate[3] = -1e-30f;
      std::vector<float> reference = gate, got = gate;
      ref::GeluMul(reference.data(), up.data(), n);
      kernels_.gelu_mul(got.data(), up.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        const float x = gate[size_t(i)], y = up[size_t(i)];
        const double exact = ExactGeluMul(x, y);
        const double bound = 1e-6 * std::fabs(double(x) * y) + 1e-37;
        ASSERT_NEAR(got[size_t(i)], exact, bound) << "x " << x << " n " << n;
        ASSERT_NEAR(reference[size_t(i)], exact, bound) << "reference, x " << x;
      }
    }
  }
}

TEST_P(FastElementwiseTest, SoftmaxMatchesReferenceAndSumsToOne) {
  for (int64_t n : kSizes) {
    for (float spread : {1.0f, 20.0f}) {
      auto x = Random(size_t(n), spread, 5);
      std::vector<float> expected = x, got = x;
      ref::Softmax(expected.data(), n);
      kernels_.softmax(got.data(), n);
      double sum = 0.0;
      for (int64_t i = 0; i < n; ++i) {
        sum += got[size_t(i)];
        ASSERT_NEAR(got[size_t(i)], expected[size_t(i)], 1e-6f * expected[size_t(i)] + 1e-37f)
            << "n " << n << " spread " << spread << " at " << i;
      }
      EXPECT_NEAR(sum, 1.0, 1e-5) << "n " << n;
    }
  }
}

TEST_P(FastElementwiseTest, SoftmaxOfEqualScoresIsUniform) {
  std::vector<float> x(13, 3.5f);
  kernels_.softmax(x.data(), 13);
  for (float v : x) EXPECT_FLOAT_EQ(v, 1.0f / 13.0f);
}

// The shared angle table must give bitwise the reference's rotation, at any position, and be
// recomputed when the step moves on.
TEST(RopeAnglesTest, BitwiseTheReferenceRotation) {
  RopeAngles angles;
  ASSERT_TRUE(angles.Init(7, 64).ok());
  const struct {
    int32_t position;
    int64_t rows, heads, head_dim;
  } cases[] = {{0, 7, 9, 64}, {5000, 3, 3, 64}, {5000, 3, 3, 64}, {1, 1, 2, 8}, {8191, 7, 5, 32}};
  for (const auto& c : cases) {
    auto x = Random(size_t(c.rows * c.heads * c.head_dim), 1.0f, uint32_t(c.position + 7));
    std::vector<float> expected = x, got = x;
    ref::Rope(expected.data(), c.rows, c.heads, c.head_dim, c.position, 10000.0f);
    const float* table = angles.Get(c.position, c.rows, c.head_dim, 10000.0f);
    ASSERT_NE(table, nullptr);
    RopeAngles::Apply(got.data(), c.rows, c.heads, c.head_dim, c.head_dim, table);
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(got[i], expected[i]) << "position " << c.position << " at " << i;
    }
  }
}

TEST(RopeAnglesTest, RefusesShapesBeyondItsSize) {
  RopeAngles angles;
  ASSERT_TRUE(angles.Init(4, 16).ok());
  EXPECT_EQ(angles.Get(0, 5, 16, 10000.0f), nullptr);
  EXPECT_EQ(angles.Get(0, 4, 32, 10000.0f), nullptr);
  EXPECT_NE(angles.Get(0, 4, 16, 10000.0f), nullptr);
}

TEST(SelectElementwiseTest, ReferenceWhenAskedOrUnsupported) {
  EXPECT_STREQ(SelectElementwise(DetectCpuFeatures(), true).name, "reference");
  EXPECT_STREQ(SelectElementwise(CpuFeatures{}, false).name, "reference");
  EXPECT_EQ(SelectElementwise(CpuFeatures{}, false).rms_norm, &ref::RmsNorm);
  const CpuFeatures f = DetectCpuFeatures();
  EXPECT_STREQ(SelectElementwise(f, false).name, f.avx2 && f.fma ? "avx2"
                                                 : f.neon        ? "neon"
                                                                 : "reference");
}

}  // namespace
}  // namespace staticlm::cpu
