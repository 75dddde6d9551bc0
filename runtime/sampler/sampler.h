// Sampler: picks the next token from a vector of logits.
//
// The logits pass through the same processors, in the same order, as Hugging Face generate():
// repetition penalty → temperature → top-k → top-p → min-p, then one token is drawn from what
// remains, renormalised. Ties between equal logits always go to the lower token id, so the
// result never depends on how a sort orders equal keys.
//
// Init allocates every scratch array once; Sample never allocates, never blocks, does
// O(V log V) work at worst (top-p alone with a nucleus spanning most of the vocabulary),
// usually O(V), and is deterministic: the
// same seed and the same sequence of calls give the same tokens, bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>

#include "platform/aligned_buffer.h"
#include "platform/status.h"
#include "runtime/sampler/rng.h"

namespace staticlm {

struct SamplerParams {
  float temperature = 0.8f;  // 0 → greedy: the argmax after the penalty, ties to the lowest id
  int32_t top_k = 40;        // keep the k highest logits (exactly k: ties by lower id); 0 → off
  float top_p = 0.95f;       // keep the smallest prefix (by probability) reaching p; 1 → off
  float min_p = 0.05f;       // keep tokens with p ≥ min_p · p_max; 0 → off
  // CTRL / Hugging Face semantics, once per distinct token in the window:
  // logit > 0 ? logit / penalty : logit * penalty. 1 → off.
  float repetition_penalty = 1.0f;
  int32_t repetition_window = 64;  // most recent history tokens the penalty looks at; 0 → all
  // Not read by Sample(): the owner of a generation passes it to Sampler::Seed when it starts.
  uint64_t seed = 0;
};

class Sampler {
 public:
  // Bytes Init allocates for a vocabulary of `vocab_size` tokens (for memory reports).
  static size_t ScratchBytes(int32_t vocab_size);

  // Init only. Allocates the scratch arrays (scores, probabilities, token order, a seen-token
  // bitmap) and seeds the generator with 0.
  Status Init(int32_t vocab_size);

  // Any phase; never allocates. Restarts the random sequence.
  void Seed(uint64_t seed) { rng_.Seed(seed); }

  // Run phase. Writes the chosen token id to `*token`. `logits` (vocab_size floats) is not
  // modified; -inf marks a token that may never be chosen, NaN and +inf are rejected.
  // `history` holds the n_history tokens so far (prompt and generated), read only by the
  // repetition penalty; it is borrowed for the call. Draws one random number unless greedy.
  // Fails with a static message: kInvalidState before Init; kInvalidArgument for bad params,
  // null pointers, NaN/+inf logits, all logits -inf, or a history token outside the vocabulary.
  Status Sample(const float* logits, const int32_t* history, size_t n_history,
                const SamplerParams& params, int32_t* token);

  int32_t vocab_size() const { return vocab_size_; }
  // The random generator, for saving and restoring its state (sessions). Never allocates.
  Rng& rng() { return rng_; }

 private:
  Status LoadScores(const float* logits);
  Status ApplyRepetitionPenalty(const int32_t* history, size_t n_history,
                                const SamplerParams& params);
  int32_t Argmax() const;
  size_t SelectCandidates(const SamplerParams& params, double* total);
  size_t SelectAll();
  size_t SelectTopK(size_t k);
  size_t SelectNucleus(float temperature, float top_p, double* total);
  double ComputeWeights(size_t n, float temperature);
  size_t ApplyTopP(size_t n, double total, float top_p) const;
  size_t ApplyMinP(size_t n, float min_p);
  int32_t Draw(size_t n);
  bool Before(int32_t a, int32_t b) const;

  int32_t vocab_size_ = 0;
  AlignedBuffer scratch_;
  uint64_t* seen_ = nullptr;  // (ceil(vocab / 64)) bitmap; all zero between calls
  float* scores_ = nullptr;   // (vocab) penalised logits
  float* weights_ = nullptr;  // (vocab) unnormalised probabilities, parallel to order_
  int32_t* order_ = nullptr;  // (vocab) candidate token ids
  Rng rng_;
};

}  // namespace staticlm
