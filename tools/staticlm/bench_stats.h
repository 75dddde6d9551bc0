// Summary statistics for `staticlm bench`: percentiles, median, standard deviation.
//
// Percentiles use linear interpolation between closest ranks (the "type 7" estimator, NumPy's
// default): for p in [0, 100] and n sorted values x[0..n), h = (n - 1) * p / 100 and the
// percentile is x[floor(h)] + (h - floor(h)) * (x[floor(h) + 1] - x[floor(h)]). So p0 is the
// minimum, p100 the maximum, p50 the usual median (the mean of the two middle values for an
// even n). The standard deviation is the population one (divide by n), 0 for one value.
// An empty input gives NaN everywhere (written as null in JSON).
//
// Header-only so that tests/bench_stats_test can use it without a library target. Nothing
// here allocates; Summarize and Median sort the caller's array in place.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

namespace staticlm::cli {

struct Summary {
  size_t count = 0;
  double min = std::numeric_limits<double>::quiet_NaN();
  double p50 = std::numeric_limits<double>::quiet_NaN();
  double p90 = std::numeric_limits<double>::quiet_NaN();
  double p99 = std::numeric_limits<double>::quiet_NaN();
  double max = std::numeric_limits<double>::quiet_NaN();
  double mean = std::numeric_limits<double>::quiet_NaN();
  double stdev = std::numeric_limits<double>::quiet_NaN();
};

// The p-th percentile (p in [0, 100]) of `n` values sorted ascending.
inline double PercentileOfSorted(const double* sorted, size_t n, double p) {
  if (n == 0) return std::numeric_limits<double>::quiet_NaN();
  if (n == 1) return sorted[0];  // also keeps GCC's array-bounds analysis from a false alarm
  double h = static_cast<double>(n - 1) * std::clamp(p, 0.0, 100.0) / 100.0;
  size_t lo = static_cast<size_t>(std::floor(h));
  if (lo + 1 >= n) return sorted[n - 1];
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[lo + 1] - sorted[lo]);
}

inline double Mean(const double* values, size_t n) {
  if (n == 0) return std::numeric_limits<double>::quiet_NaN();
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += values[i];
  return sum / static_cast<double>(n);
}

// Population standard deviation (two passes, so large offsets do not cancel).
inline double StdDev(const double* values, size_t n) {
  if (n == 0) return std::numeric_limits<double>::quiet_NaN();
  double mean = Mean(values, n);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += (values[i] - mean) * (values[i] - mean);
  return std::sqrt(sum / static_cast<double>(n));
}

// Sorts `values` in place and returns their median (p50).
inline double Median(double* values, size_t n) {
  std::sort(values, values + n);
  return PercentileOfSorted(values, n, 50);
}

// Sorts `values` in place and summarizes them.
inline Summary Summarize(double* values, size_t n) {
  Summary s;
  s.count = n;
  if (n == 0) return s;
  s.mean = Mean(values, n);
  s.stdev = StdDev(values, n);
  std::sort(values, values + n);
  s.min = values[0];
  s.max = values[n - 1];
  s.p50 = PercentileOfSorted(values, n, 50);
  s.p90 = PercentileOfSorted(values, n, 90);
  s.p99 = PercentileOfSorted(values, n, 99);
  return s;
}

}  // namespace staticlm::cli
