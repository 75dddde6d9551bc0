// The token-choice rules of EnqueueSample (backends/device_logits.h, runtime/sampler), host and
// device, checked on the host by tests/cuda_math_test.cpp: the strict order of candidates, and
// top-p, min-p and the draw over the k best.
#pragma once

#include <cmath>
#include <cstdint>

#include "contract/hd.h"

namespace staticlm::cuda {

// Candidate (score a, id ia) comes before (b, ib): the higher score, then the lower id.
STATICLM_HD inline bool SampleBefore(float a, int32_t ia, float b, int32_t ib) {
  return a > b || (a == b && ia < ib);
}

// The weight of a candidate: e^((s − best) / T) in f32, as Sampler::ComputeWeights (best 1).
STATICLM_HD inline float SampleWeight(float score, float best, float temperature) {
  return expf((score - best) / temperature);
}

// How many of the n candidates (scores in descending order, the first `best`) top-p keeps, as
// Sampler::ApplyTopP: the shortest prefix whose weight reaches top_p · the total of all n (summed
// in double, in order), at least one; all n when top_p is 1.
STATICLM_HD inline int32_t SampleTopPCount(const float* scores, int32_t n, float best,
                                           float temperature, float top_p) {
  if (!(top_p < 1.0f)) return n;
  double total = 0.0;
  for (int32_t i = 0; i < n; ++i) total += SampleWeight(scores[i], best, temperature);
  const double limit = static_cast<double>(top_p) * total;
  double before = 0.0;
  int32_t kept = 0;
  while (kept < n && (kept == 0 || before < limit)) {
    before += SampleWeight(scores[kept], best, temperature);
    ++kept;
  }
  return kept;
}

// The draw from n candidates (scores in descending order, ids alongside), as Sampler does after
// top-k: top-p keeps a prefix (SampleTopPCount), min-p keeps the weights ≥ min_p (the best's
// weight is 1), then the first kept candidate whose cumulative weight (double, in order) exceeds
// uniform · the kept total — the last positive one when rounding puts the threshold at the end,
// as Sampler::Draw.
STATICLM_HD inline int32_t SampleDraw(const float* scores, const int32_t* ids, int32_t n,
                                      float temperature, float top_p, float min_p, double uniform) {
  float best = scores[0];
  for (int32_t i = 1; i < n; ++i) best = scores[i] > best ? scores[i] : best;
  n = SampleTopPCount(scores, n, best, temperature, top_p);
  double total = 0.0;
  for (int32_t i = 0; i < n; ++i) {
    const float w = SampleWeight(scores[i], best, temperature);
    if (w >= min_p) total += w;
  }
  const double threshold = uniform * total;
  double cumulative = 0.0;
  int32_t last_positive = 0;
  for (int32_t i = 0; i < n; ++i) {
    const float w = SampleWeight(scores[i], best, temperature);
    if (w <= 0.0f || !(w >= min_p)) continue;
    cumulative += w;
    last_positive = i;
    if (threshold < cumulative) return ids[i];
  }
  return ids[last_positive];
}

}  // namespace staticlm::cuda
