// The token-choice rules of EnqueueSample (backends/device_logits.h, runtime/sampler), host and
// device, checked on the host by tests/cuda_math_test.cpp: the strict order of candidates and
// the draw from the k best.
#pragma once

#include <cmath>
#include <cstdint>

#include "contract/hd.h"

namespace staticlm::cuda {

// Candidate (score a, id ia) comes before (b, ib): the higher score, then the lower id.
STATICLM_HD inline bool SampleBefore(float a, int32_t ia, float b, int32_t ib) {
  return a > b || (a == b && ia < ib);
}

// The draw from n candidates (scores in descending order, ids alongside): weights e^((s − s0)/T)
// in f32, their total in double, the first whose cumulative weight exceeds uniform · total (the
// last positive one when rounding puts the threshold at the end), as Sampler::Draw.
STATICLM_HD inline int32_t SampleDraw(const float* scores, const int32_t* ids, int32_t n,
                                      float temperature, double uniform) {
  float max_score = scores[0];
  for (int32_t i = 1; i < n; ++i) max_score = scores[i] > max_score ? scores[i] : max_score;
  double total = 0.0;
  for (int32_t i = 0; i < n; ++i) total += expf((scores[i] - max_score) / temperature);
  const double threshold = uniform * total;
  double cumulative = 0.0;
  int32_t last_positive = 0;
  for (int32_t i = 0; i < n; ++i) {
    const float w = expf((scores[i] - max_score) / temperature);
    if (w <= 0.0f) continue;
    cumulative += w;
    last_positive = i;
    if (threshold < cumulative) return ids[i];
  }
  return ids[last_positive];
}

}  // namespace staticlm::cuda
