// An independent reference for the device sampling tests (Vulkan, CUDA): the candidates the host
// Sampler keeps after top-k, top-p and min-p, recomputed here in double, and whether a draw or
// a filter sits within rounding of a boundary — where a device that sums in float, or whose exp
// differs from the host's by an ulp, may legitimately pick the neighbour.
#pragma once

#include <cstdint>
#include <vector>

namespace staticlm::test {

// The top-k candidates (descending, ties to the lower id) and their cumulative weights
// e^((s − s_max) / T) in double.
struct HostTopK {
  std::vector<int32_t> order;
  std::vector<double> cumulative;
};

HostTopK TopKInDouble(const std::vector<float>& logits, int32_t k, float temperature);

// Whether u · Σw is within 3e-5 · Σw of a cumulative weight.
bool NearBoundary(const HostTopK& t, double u);

// The candidates after top-k, top-p (the shortest prefix reaching top_p · Σw) and min-p (weights
// ≥ min_p), in order; `ambiguous` when rounding could keep a different set: top_p · Σw within
// 3e-5 · Σw of a cumulative weight that decides whether the next candidate is kept, or a weight
// (other than the exact 1 of a logit tied with the best) within 1e-5 · min_p of min_p (exp's
// rounding on a device is a few ulps).
struct HostFiltered {
  HostTopK kept;
  bool ambiguous = false;
};

HostFiltered FilteredInDouble(const std::vector<float>& logits, int32_t k, float temperature,
                              float top_p, float min_p);

inline bool NearBoundary(const HostFiltered& f, double u) {
  return f.ambiguous || NearBoundary(f.kept, u);
}

}  // namespace staticlm::test
