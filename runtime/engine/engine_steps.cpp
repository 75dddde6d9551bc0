// Engine: the run-phase steps — prefill, batched decode, sampling — and each sequence's state.
// Program runs the plans; Sequences keeps what each step leaves. Nothing here allocates.
#include <climits>
#include <cmath>
#include <cstring>

#include "runtime/engine/engine.h"

namespace staticlm {
Status Engine::NoSuchSequence() {
  return Status::Error(StatusCode::kInvalidArgument, "sequence id outside 0..max_batch-1");
}

uint64_t Engine::SequenceKvBytes() const {
  const uint64_t batch = static_cast<uint64_t>(max_batch());
  return (memory_.kv_cache_bytes + batch - 1) / batch;
}

Status Engine::CheckTokens(const int32_t* tokens, size_t n) const {
  for (size_t i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= config().vocab_size) {
      return Status::Error(StatusCode::kInvalidArgument, "token id outside the vocabulary");
    }
  }
  return Status::Ok();
}

// With one sequence the logits may stay where the backend put them until asked for (logits(),
// a host sample, a snapshot); with several, each sequence keeps its own copy, so the step's
// rows are fetched at once.
Status Engine::FetchHostLogits(int32_t sequence) {
  if (!ValidSequence(sequence) || !sequences_.allocated()) return Status::Ok();
  Sequence& q = sequences_.at(sequence);
  if (!q.have_logits || !q.host_stale) return Status::Ok();
  if (q.logits_step != program_.step_count()) {  // cannot happen: a stale sequence is the only one
    return Status::Error(StatusCode::kInternal, "logits overwritten before they were fetched");
  }
  STATICLM_RETURN_IF_ERROR(program_.FetchLogits(q.logits_plan, q.logits_row, 1));
  q.host_stale = false;
  return Status::Ok();
}

Status Engine::RunChunk(int32_t sequence, const int32_t* tokens, int32_t n_tokens) {
  const int plan = program_.PlanIndex(n_tokens);
  int32_t position = sequences_.at(sequence).position;
  StepParams step;
  step.n_tokens = n_tokens;
  step.position = position;
  step.sequence = sequence;
  if (program_.plan(plan).limits.rows_are_sequences) {  // the batched plan, with one row
    step.row_sequences = &sequence;
    step.row_positions = &position;
  }
  STATICLM_RETURN_IF_ERROR(program_.Run(plan, tokens, step));
  const bool stay = program_.backend()->logits_stay_on_device();
  if (max_batch() > 1 && stay) STATICLM_RETURN_IF_ERROR(program_.FetchLogits(plan, 0, 1));
  sequences_.Record(sequence, tokens, n_tokens, {program_.step_count(), plan, 0, stay});
  return Status::Ok();
}

Status Engine::Prefill(const int32_t* tokens, size_t n_tokens, int32_t sequence) {
  if (!allocated()) return Status::Error(StatusCode::kInvalidState, "not allocated");
  if (!ValidSequence(sequence)) return NoSuchSequence();
  if (n_tokens == 0) return Status::Error(StatusCode::kInvalidArgument, "no tokens to prefill");
  const int32_t position = sequences_.at(sequence).position;
  if (n_tokens > static_cast<size_t>(program_.PositionEnd() - position)) {
    return Status::Error(StatusCode::kContextFull, "the tokens do not fit in the context");
  }
  STATICLM_RETURN_IF_ERROR(CheckTokens(tokens, n_tokens));
  const size_t chunk_limit = static_cast<size_t>(program_.limits().prefill_chunk);
  size_t done = 0;
  while (done < n_tokens) {
    size_t chunk = n_tokens - done;
    if (chunk > chunk_limit) chunk = chunk_limit;
    STATICLM_RETURN_IF_ERROR(RunChunk(sequence, tokens + done, static_cast<int32_t>(chunk)));
    done += chunk;
  }
  return Status::Ok();
}

Status Engine::DecodeBatch(const int32_t* sequences, const int32_t* tokens, size_t n) {
  if (!allocated()) return Status::Error(StatusCode::kInvalidState, "not allocated");
  if (n == 0 || n > static_cast<size_t>(max_batch()) || sequences == nullptr || tokens == nullptr) {
    return Status::Error(StatusCode::kInvalidArgument, "a batch needs 1..max_batch sequences");
  }
  STATICLM_RETURN_IF_ERROR(CheckTokens(tokens, n));
  int32_t positions[kMaxBatch];
  uint64_t seen = 0;
  for (size_t r = 0; r < n; ++r) {
    const int32_t s = sequences[r];
    if (!ValidSequence(s)) return NoSuchSequence();
    if ((seen >> s) & 1) {
      return Status::Error(StatusCode::kInvalidArgument, "a sequence appears twice in one batch");
    }
    seen |= uint64_t{1} << s;
    positions[r] = sequences_.at(s).position;
    if (positions[r] >= program_.PositionEnd()) {
      return Status::Error(StatusCode::kContextFull, "a sequence's context is full");
    }
  }
  if (n == 1) return RunChunk(sequences[0], tokens, 1);
  const int plan = Program::kDecodePlan;
  StepParams step;
  step.n_tokens = static_cast<int32_t>(n);
  step.row_sequences = sequences;
  step.row_positions = positions;
  STATICLM_RETURN_IF_ERROR(program_.Run(plan, tokens, step));
  // n > 1: several sequences, each keeping its own copy of its row.
  const bool stay = program_.backend()->logits_stay_on_device();
  if (stay) STATICLM_RETURN_IF_ERROR(program_.FetchLogits(plan, 0, static_cast<int32_t>(n)));
  for (size_t r = 0; r < n; ++r) {
    const StepLogits where{program_.step_count(), plan, static_cast<int32_t>(r), stay};
    sequences_.Record(sequences[r], tokens + r, 1, where);
  }
  return Status::Ok();
}

const float* Engine::logits(int32_t sequence) const {
  if (!ValidSequence(sequence) || !sequences_.allocated() || !sequences_.at(sequence).have_logits) {
    return nullptr;
  }
  Engine* self = const_cast<Engine*>(this);
  if (!self->FetchHostLogits(sequence).ok()) return nullptr;
  return self->sequences_.logits(sequence);
}

int32_t Engine::position(int32_t sequence) const {
  if (!ValidSequence(sequence) || !sequences_.allocated()) return sequence == 0 ? 0 : -1;
  return sequences_.at(sequence).position;
}

Status Engine::Sample(const SamplerParams& params, int32_t* token, int32_t sequence) {
  if (!ValidSequence(sequence)) return NoSuchSequence();
  DeviceSampling device;
  if (token != nullptr && ChooseDeviceSampling(params, sequence, &device)) {
    return SampleOnDevice(sequence, device, token);
  }
  STATICLM_RETURN_IF_ERROR(FetchHostLogits(sequence));
  const float* l = logits(sequence);
  if (l == nullptr) return Status::Error(StatusCode::kInvalidState, "no logits: prefill first");
  size_t n = 0;
  const int32_t* tokens = history(&n, sequence);
  // The sampler draws from the sequence's own generator: its tokens do not depend on others.
  Rng& rng = sequences_.at(sequence).rng;
  sampler_.rng() = rng;
  Status s = sampler_.Sample(l, tokens, n, params, token);
  rng = sampler_.rng();
  return s;
}

namespace {

// Whether the device does exactly what Sampler would for `p`: greedy, or top-k with a
// temperature, k below the vocabulary (else the host draws over the whole vocabulary in id
// order, or measures top-p against the whole vocabulary's mass), then top-p and min-p over the
// k. A repetition penalty, and parameters Sampler rejects (it says why), stay on the host.
// Written so that NaN fails every check.
bool DeviceDoes(const SamplerParams& p, int32_t max_k, int32_t vocab, DeviceSampling* out) {
  const bool valid = p.temperature >= 0.0f && !std::isinf(p.temperature) && p.top_k >= 0 &&
                     p.top_p > 0.0f && p.top_p <= 1.0f && p.min_p >= 0.0f && p.min_p <= 1.0f &&
                     p.repetition_window >= 0;
  if (max_k <= 0 || !valid || p.repetition_penalty != 1.0f) return false;
  if (p.temperature == 0.0f) {  // greedy: Sampler applies no filter
    out->top_k = 0;
    return true;
  }
  if (p.top_k <= 0 || p.top_k >= vocab || p.top_k > max_k) return false;
  out->top_k = p.top_k;
  out->temperature = p.temperature;
  out->top_p = p.top_p;
  out->min_p = p.min_p;
  return true;
}

}  // namespace

// The device samples only the logits of the backend's last step, i.e. this sequence's latest
// (not ones a snapshot or session restored into host memory).
bool Engine::ChooseDeviceSampling(const SamplerParams& params, int32_t sequence,
                                  DeviceSampling* out) const {
  if (!device_sampling_ || !allocated()) return false;
  const Sequence& q = sequences_.at(sequence);
  if (!q.have_logits || q.logits_step == 0 || q.logits_step != program_.step_count()) {
    return false;
  }
  return DeviceDoes(params, backend()->max_device_top_k(), config().vocab_size, out);
}

// Sampler draws one number for top-k and none for greedy, and none when it fails; so does
// this, from the sequence's own generator, so seeds, sessions and snapshots continue the same
// random sequence whichever side samples.
Status Engine::SampleOnDevice(int32_t sequence, DeviceSampling sampling, int32_t* token) {
  Sequence& q = sequences_.at(sequence);
  Rng rng = q.rng;
  if (sampling.top_k > 0) sampling.uniform = rng.NextUnit();
  STATICLM_RETURN_IF_ERROR(backend()->SampleOnDevice(q.logits_plan, q.logits_row, sampling, token));
  q.rng = rng;
  return Status::Ok();
}

const int32_t* Engine::history(size_t* n, int32_t sequence) const {
  *n = 0;
  if (!ValidSequence(sequence) || !sequences_.allocated()) return nullptr;
  return sequences_.History(sequence, n);
}

Detokenizer* Engine::detokenizer(int32_t sequence) {
  if (!ValidSequence(sequence) || !sequences_.allocated()) return nullptr;
  return &sequences_.at(sequence).detokenizer;
}

Status Engine::ResetSequence(int32_t sequence) {
  if (!ValidSequence(sequence)) return NoSuchSequence();
  if (sequences_.allocated()) sequences_.Reset(sequence);
  return Status::Ok();
}

void Engine::Reset() {
  for (int32_t s = 0; s < max_batch(); ++s) (void)ResetSequence(s);
}

void Engine::Seed(uint64_t seed) {
  if (!sequences_.allocated()) return;
  for (int32_t s = 0; s < max_batch(); ++s) sequences_.at(s).rng.Seed(seed);
}

Status Engine::SeedSequence(int32_t sequence, uint64_t seed) {
  if (!ValidSequence(sequence)) return NoSuchSequence();
  if (sequences_.allocated()) sequences_.at(sequence).rng.Seed(seed);
  return Status::Ok();
}

}  // namespace staticlm
