#include "runtime/sampler/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace staticlm {
namespace {

Status Invalid(const char* message) {
  return Status::Error(StatusCode::kInvalidArgument, "%s", message);
}

size_t BitmapWords(int32_t vocab_size) {
  return (static_cast<size_t>(vocab_size) + 63) / 64;
}

// Written so that NaN fails every check (every comparison with NaN is false).
Status ValidateParams(const SamplerParams& p) {
  if (!(p.temperature >= 0.0f) || std::isinf(p.temperature)) {
    return Invalid("sampler: temperature must be finite and >= 0");
  }
  if (p.top_k < 0) return Invalid("sampler: top_k must be >= 0");
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) return Invalid("sampler: top_p must be in (0, 1]");
  if (!(p.min_p >= 0.0f && p.min_p <= 1.0f)) return Invalid("sampler: min_p must be in [0, 1]");
  if (!(p.repetition_penalty > 0.0f) || std::isinf(p.repetition_penalty)) {
    return Invalid("sampler: repetition_penalty must be finite and > 0");
  }
  if (p.repetition_window < 0) return Invalid("sampler: repetition_window must be >= 0");
  return Status::Ok();
}

}  // namespace

size_t Sampler::ScratchBytes(int32_t vocab_size) {
  if (vocab_size <= 0) return 0;
  return BitmapWords(vocab_size) * sizeof(uint64_t) +
         static_cast<size_t>(vocab_size) * (sizeof(float) * 2 + sizeof(int32_t));
}

Status Sampler::Init(int32_t vocab_size) {
  if (vocab_size <= 0) {
    return Status::Error(StatusCode::kInvalidArgument, "sampler: vocabulary size %d must be > 0",
                         vocab_size);
  }
  STATICLM_RETURN_IF_ERROR(scratch_.Allocate(ScratchBytes(vocab_size), 64, "sampler scratch"));
  // The bitmap comes first so it is 8-byte aligned; the 4-byte arrays follow it.
  uint8_t* p = scratch_.data();
  seen_ = reinterpret_cast<uint64_t*>(p);
  p += BitmapWords(vocab_size) * sizeof(uint64_t);
  scores_ = reinterpret_cast<float*>(p);
  p += static_cast<size_t>(vocab_size) * sizeof(float);
  weights_ = reinterpret_cast<float*>(p);
  p += static_cast<size_t>(vocab_size) * sizeof(float);
  order_ = reinterpret_cast<int32_t*>(p);
  vocab_size_ = vocab_size;
  rng_.Seed(0);
  return Status::Ok();
}

Status Sampler::Sample(const float* logits, const int32_t* history, size_t n_history,
                       const SamplerParams& params, int32_t* token) {
  if (vocab_size_ == 0) return Status::Error(StatusCode::kInvalidState, "sampler: not initialised");
  if (logits == nullptr || token == nullptr || (history == nullptr && n_history > 0)) {
    return Invalid("sampler: null logits, history or token");
  }
  STATICLM_RETURN_IF_ERROR(ValidateParams(params));
  STATICLM_RETURN_IF_ERROR(LoadScores(logits));
  STATICLM_RETURN_IF_ERROR(ApplyRepetitionPenalty(history, n_history, params));

  // Every filter keeps the highest score, so greedy needs none of them.
  if (params.temperature == 0.0f) {
    *token = Argmax();
    return Status::Ok();
  }
  double total = 0.0;
  size_t n = SelectCandidates(params, &total);
  if (params.top_p < 1.0f) n = ApplyTopP(n, total, params.top_p);
  if (params.min_p > 0.0f) n = ApplyMinP(n, params.min_p);
  *token = Draw(n);
  return Status::Ok();
}

Status Sampler::LoadScores(const float* logits) {
  bool any_finite = false;
  for (int32_t i = 0; i < vocab_size_; ++i) {
    const float v = logits[i];
    if (std::isnan(v) || v == std::numeric_limits<float>::infinity()) {
      return Invalid("sampler: logits contain NaN or +inf");
    }
    any_finite |= v != -std::numeric_limits<float>::infinity();
    scores_[i] = v;
  }
  if (!any_finite) return Invalid("sampler: every logit is -inf");
  return Status::Ok();
}

// The bitmap makes the penalty apply once per distinct token, as a gather/scatter over the
// token ids does in Hugging Face; it is cleared again before returning.
Status Sampler::ApplyRepetitionPenalty(const int32_t* history, size_t n_history,
                                       const SamplerParams& params) {
  const float penalty = params.repetition_penalty;
  if (penalty == 1.0f || n_history == 0) return Status::Ok();
  const size_t window = static_cast<size_t>(params.repetition_window);
  const size_t begin = (window > 0 && n_history > window) ? n_history - window : 0;
  for (size_t i = begin; i < n_history; ++i) {
    if (history[i] < 0 || history[i] >= vocab_size_) {
      return Invalid("sampler: history token outside the vocabulary");
    }
  }
  for (size_t i = begin; i < n_history; ++i) {
    const int32_t t = history[i];
    const uint64_t bit = uint64_t{1} << (t % 64);
    uint64_t& word = seen_[t / 64];
    if ((word & bit) != 0) continue;
    word |= bit;
    const float s = scores_[t];
    scores_[t] = s > 0.0f ? s / penalty : s * penalty;
  }
  for (size_t i = begin; i < n_history; ++i) seen_[history[i] / 64] = 0;
  return Status::Ok();
}

int32_t Sampler::Argmax() const {
  int32_t best = 0;
  for (int32_t i = 1; i < vocab_size_; ++i) {
    if (scores_[i] > scores_[best]) best = i;
  }
  return best;
}

// A strict total order: higher score first, then lower id. With it, nth_element and sort give
// the same result whatever their (unstable) internals do with equal scores.
bool Sampler::Before(int32_t a, int32_t b) const {
  return scores_[a] > scores_[b] || (scores_[a] == scores_[b] && a < b);
}

// Fills order_ and weights_ with the candidates top-p and min-p filter next, and sets *total
// to the weight of every candidate (the mass top-p measures against). Candidates come in
// descending order whenever top-k or top-p is on.
size_t Sampler::SelectCandidates(const SamplerParams& params, double* total) {
  if (params.top_k > 0 && params.top_k < vocab_size_) {
    const size_t n = SelectTopK(static_cast<size_t>(params.top_k));
    *total = ComputeWeights(n, params.temperature);
    return n;
  }
  if (params.top_p < 1.0f) return SelectNucleus(params.temperature, params.top_p, total);
  const size_t n = SelectAll();
  *total = ComputeWeights(n, params.temperature);
  return n;
}

size_t Sampler::SelectAll() {
  const size_t v = static_cast<size_t>(vocab_size_);
  for (size_t i = 0; i < v; ++i) order_[i] = static_cast<int32_t>(i);
  return v;
}

// Puts the k best candidates first, in descending order.
size_t Sampler::SelectTopK(size_t k) {
  const size_t v = SelectAll();
  auto before = [this](int32_t a, int32_t b) { return Before(a, b); };
  std::nth_element(order_, order_ + k, order_ + v, before);
  std::sort(order_, order_ + k, before);
  return k;
}

// Top-p without top-k. A language model's nucleus is usually a few dozen tokens, so rather
// than sorting the whole vocabulary this grows a sorted top-k prefix until its mass reaches
// top_p; ApplyTopP then stops inside that prefix exactly where it would in a full sort. Only a
// nucleus spanning most of the vocabulary costs the full O(V log V) sort.
size_t Sampler::SelectNucleus(float temperature, float top_p, double* total) {
  const size_t v = SelectAll();
  float max_score = scores_[0];
  for (size_t i = 1; i < v; ++i) max_score = std::max(max_score, scores_[i]);
  double mass = 0.0;
  for (size_t i = 0; i < v; ++i) mass += std::exp((scores_[i] - max_score) / temperature);
  *total = mass;
  const double limit = static_cast<double>(top_p) * mass;
  for (size_t k = 64; k < v; k *= 4) {
    if (ComputeWeights(SelectTopK(k), temperature) >= limit) return k;
  }
  std::sort(order_, order_ + v, [this](int32_t a, int32_t b) { return Before(a, b); });
  ComputeWeights(v, temperature);
  return v;
}

// weights_[i] = exp((s_i − s_max) / T) for the first n candidates: the softmax numerators of
// the temperature-scaled scores, with the best candidate at exactly 1. Returns their sum.
double Sampler::ComputeWeights(size_t n, float temperature) {
  float max_score = scores_[order_[0]];
  for (size_t i = 1; i < n; ++i) max_score = std::max(max_score, scores_[order_[i]]);
  double total = 0.0;
  for (size_t i = 0; i < n; ++i) {
    weights_[i] = std::exp((scores_[order_[i]] - max_score) / temperature);
    total += weights_[i];
  }
  return total;
}

// Candidates are in descending order. Keeps token i when the probability mass before it is
// below top_p — the smallest prefix whose mass reaches top_p, as Hugging Face's TopP.
size_t Sampler::ApplyTopP(size_t n, double total, float top_p) const {
  const double limit = static_cast<double>(top_p) * total;
  double before = 0.0;
  size_t kept = 0;
  while (kept < n && (kept == 0 || before < limit)) before += weights_[kept++];
  return kept;
}

// The best candidate has weight exactly 1, so p ≥ min_p · p_max is weight ≥ min_p. Compacts
// in place, keeping the order; the best candidate always survives.
size_t Sampler::ApplyMinP(size_t n, float min_p) {
  size_t kept = 0;
  for (size_t i = 0; i < n; ++i) {
    if (weights_[i] >= min_p) {
      weights_[kept] = weights_[i];
      order_[kept] = order_[i];
      ++kept;
    }
  }
  return kept;
}

// Inverse-CDF draw over the kept weights, summed in the same order as the walk so the last
// positive weight is always reachable.
int32_t Sampler::Draw(size_t n) {
  double total = 0.0;
  for (size_t i = 0; i < n; ++i) total += weights_[i];
  const double threshold = rng_.NextUnit() * total;
  double cumulative = 0.0;
  size_t last_positive = 0;
  for (size_t i = 0; i < n; ++i) {
    if (weights_[i] <= 0.0f) continue;
    cumulative += weights_[i];
    last_positive = i;
    if (threshold < cumulative) return order_[i];
  }
  return order_[last_positive];  // only when rounding put the threshold at the very end
}

}  // namespace staticlm
