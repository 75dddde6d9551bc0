#include "tests/support/sampling_reference.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace staticlm::test {

HostTopK TopKInDouble(const std::vector<float>& logits, int32_t k, float temperature) {
  HostTopK r;
  r.order.resize(logits.size());
  std::iota(r.order.begin(), r.order.end(), 0);
  std::stable_sort(r.order.begin(), r.order.end(),
                   [&](int32_t a, int32_t b) { return logits[size_t(a)] > logits[size_t(b)]; });
  r.order.resize(size_t(k));
  const double top = logits[size_t(r.order[0])];
  double sum = 0.0;
  for (int32_t id : r.order) {
    sum += std::exp((double(logits[size_t(id)]) - top) / double(temperature));
    r.cumulative.push_back(sum);
  }
  return r;
}

bool NearBoundary(const HostTopK& t, double u) {
  const double total = t.cumulative.back(), x = u * total;
  for (double c : t.cumulative) {
    if (std::fabs(x - c) <= 3e-5 * total) return true;
  }
  return false;
}

HostFiltered FilteredInDouble(const std::vector<float>& logits, int32_t k, float temperature,
                              float top_p, float min_p) {
  const HostTopK all = TopKInDouble(logits, k, temperature);
  const double total = all.cumulative.back();
  HostFiltered r;
  size_t n = all.order.size();
  if (top_p < 1.0f) {
    const double limit = double(top_p) * total;
    n = 1;
    while (n < all.order.size() && all.cumulative[n - 1] < limit) ++n;
    // Candidate j + 1 is kept when the weight before it, cumulative[j], is below the limit;
    // the last cumulative weight decides nothing.
    for (size_t j = 0; j + 1 < all.cumulative.size(); ++j) {
      r.ambiguous |= std::fabs(all.cumulative[j] - limit) <= 3e-5 * total;
    }
  }
  const double top = logits[size_t(all.order[0])];
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const int32_t id = all.order[i];
    const double w = std::exp((double(logits[size_t(id)]) - top) / double(temperature));
    // A logit tied with the best has weight exactly 1 everywhere; others are rounded.
    if (min_p > 0.0f && double(logits[size_t(id)]) != top) {
      r.ambiguous |= std::fabs(w - double(min_p)) <= 1e-5 * double(min_p);
    }
    if (w < double(min_p)) continue;
    sum += w;
    r.kept.order.push_back(id);
    r.kept.cumulative.push_back(sum);
  }
  return r;
}

}  // namespace staticlm::test
