// The statistics of `staticlm bench` (tools/staticlm/bench_stats.h) against values worked out
// by hand: linear-interpolation percentiles (h = (n - 1) p / 100) and the population stdev.
#include "tools/staticlm/bench_stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace staticlm::cli {
namespace {

constexpr double kTolerance = 1e-12;

TEST(BenchStatsTest, OneValue) {
  double v[] = {5.0};
  Summary s = Summarize(v, 1);
  EXPECT_EQ(s.count, 1u);
  EXPECT_DOUBLE_EQ(s.min, 5.0);
  EXPECT_DOUBLE_EQ(s.p50, 5.0);
  EXPECT_DOUBLE_EQ(s.p90, 5.0);
  EXPECT_DOUBLE_EQ(s.p99, 5.0);
  EXPECT_DOUBLE_EQ(s.max, 5.0);
  EXPECT_DOUBLE_EQ(s.mean, 5.0);
  EXPECT_DOUBLE_EQ(s.stdev, 0.0);
}

TEST(BenchStatsTest, OddCountUnsorted) {
  double v[] = {3.0, 1.0, 2.0};
  Summary s = Summarize(v, 3);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 3.0);
  EXPECT_DOUBLE_EQ(s.p50, 2.0);          // h = 1
  EXPECT_NEAR(s.p90, 2.8, kTolerance);   // h = 1.8: 2 + 0.8 * (3 - 2)
  EXPECT_NEAR(s.p99, 2.98, kTolerance);  // h = 1.98
  EXPECT_DOUBLE_EQ(s.mean, 2.0);
  EXPECT_NEAR(s.stdev, std::sqrt(2.0 / 3.0), kTolerance);  // (1 + 0 + 1) / 3
  // Summarize sorts in place.
  EXPECT_EQ(v[0], 1.0);
  EXPECT_EQ(v[2], 3.0);
}

TEST(BenchStatsTest, EvenCountMedianIsMeanOfMiddleTwo) {
  double v[] = {4.0, 1.0, 3.0, 2.0};
  Summary s = Summarize(v, 4);
  EXPECT_DOUBLE_EQ(s.p50, 2.5);          // h = 1.5
  EXPECT_NEAR(s.p90, 3.7, kTolerance);   // h = 2.7
  EXPECT_NEAR(s.p99, 3.97, kTolerance);  // h = 2.97
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_NEAR(s.stdev, std::sqrt(1.25), kTolerance);  // (2.25 + 0.25 + 0.25 + 2.25) / 4
}

TEST(BenchStatsTest, TenValues) {
  std::vector<double> v;
  for (int i = 10; i >= 1; --i) v.push_back(i);
  Summary s = Summarize(v.data(), v.size());
  EXPECT_DOUBLE_EQ(s.p50, 5.5);
  EXPECT_NEAR(s.p90, 9.1, kTolerance);                // h = 8.1
  EXPECT_NEAR(s.p99, 9.91, kTolerance);               // h = 8.91
  EXPECT_NEAR(s.stdev, std::sqrt(8.25), kTolerance);  // (n² − 1) / 12 for 1..n
}

TEST(BenchStatsTest, TextbookStdev) {
  double v[] = {2, 4, 4, 4, 5, 5, 7, 9};
  EXPECT_DOUBLE_EQ(Mean(v, 8), 5.0);
  EXPECT_DOUBLE_EQ(StdDev(v, 8), 2.0);
}

TEST(BenchStatsTest, StdevIgnoresALargeOffset) {
  double v[] = {1e9 + 1, 1e9 + 2, 1e9 + 3};
  EXPECT_NEAR(StdDev(v, 3), std::sqrt(2.0 / 3.0), 1e-6);
}

TEST(BenchStatsTest, PercentileEndsAndClamping) {
  const double sorted[] = {10, 20, 30, 40, 50};
  EXPECT_DOUBLE_EQ(PercentileOfSorted(sorted, 5, 0), 10);
  EXPECT_DOUBLE_EQ(PercentileOfSorted(sorted, 5, 100), 50);
  EXPECT_DOUBLE_EQ(PercentileOfSorted(sorted, 5, 25), 20);    // h = 1
  EXPECT_DOUBLE_EQ(PercentileOfSorted(sorted, 5, 37.5), 25);  // h = 1.5
  EXPECT_DOUBLE_EQ(PercentileOfSorted(sorted, 5, -3), 10);
  EXPECT_DOUBLE_EQ(PercentileOfSorted(sorted, 5, 250), 50);
}

TEST(BenchStatsTest, TwoValues) {
  double v[] = {7.0, 3.0};
  Summary s = Summarize(v, 2);
  EXPECT_DOUBLE_EQ(s.p50, 5.0);
  EXPECT_NEAR(s.p90, 6.6, kTolerance);  // h = 0.9
  EXPECT_NEAR(s.p99, 6.96, kTolerance);
  EXPECT_DOUBLE_EQ(s.stdev, 2.0);
}

TEST(BenchStatsTest, MedianSortsInPlace) {
  double v[] = {9, 1, 5};
  EXPECT_DOUBLE_EQ(Median(v, 3), 5.0);
  EXPECT_EQ(v[0], 1);
  EXPECT_EQ(v[1], 5);
  EXPECT_EQ(v[2], 9);
}

TEST(BenchStatsTest, EmptyIsNaN) {
  Summary s = Summarize(nullptr, 0);
  EXPECT_EQ(s.count, 0u);
  EXPECT_TRUE(std::isnan(s.min));
  EXPECT_TRUE(std::isnan(s.p50));
  EXPECT_TRUE(std::isnan(s.max));
  EXPECT_TRUE(std::isnan(s.stdev));
  EXPECT_TRUE(std::isnan(PercentileOfSorted(nullptr, 0, 50)));
  EXPECT_TRUE(std::isnan(Median(nullptr, 0)));
}

}  // namespace
}  // namespace staticlm::cli
