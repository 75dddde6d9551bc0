// Engine: the run-phase steps — prefill, batched decode, sampling — and each sequence's state.
// Nothing here allocates.
#include <climits>
#include <cmath>
#include <cstring>

#include "runtime/engine/engine.h"

namespace staticlm {

uint64_t Engine::SequenceKvBytes() const {
  const uint64_t batch = static_cast<uint64_t>(limits_.max_batch);
  return (memory_.kv_cache_bytes + batch - 1) / batch;
}

// Ring caches take positions without bound, up to int32's end; a Static cache max_context.
int32_t Engine::PositionEnd() const {
  return PlanPositionsUnbounded(plans_[0]) ? INT32_MAX : limits_.max_context;
}

Status Engine::CheckTokens(const int32_t* tokens, size_t n) const {
  for (size_t i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= config_.vocab_size) {
      return Status::Error(StatusCode::kInvalidArgument, "token id outside the vocabulary");
    }
  }
  return Status::Ok();
}

float* Engine::IoLogits(int row) {
  const Plan& plan = plans_[0];
  float* first = reinterpret_cast<float*>(io_.data() + plan.tensors[plan.logits_tensor].offset);
  return first + static_cast<size_t>(row) * static_cast<size_t>(config_.vocab_size);
}

float* Engine::MutableLogits(int32_t s) {
  if (sequence_logits_ == nullptr) return IoLogits(0);
  return sequence_logits_.get() + static_cast<size_t>(s) * static_cast<size_t>(config_.vocab_size);
}

// After a step: the sequence's tokens join its history (a ring of the last max_context), its
// position advances, and its logits are those of io row `io_logits_row`.
void Engine::RecordTokens(int32_t s, const int32_t* tokens, int32_t n, int io_logits_row) {
  Sequence& q = sequences_[static_cast<size_t>(s)];
  int32_t* history = HistoryOf(s);
  for (int32_t i = 0; i < n; ++i) {
    history[static_cast<size_t>((int64_t{q.position} + i) % limits_.max_context)] = tokens[i];
  }
  q.position += n;
  q.have_logits = true;
  q.logits_step = step_count_;
  q.logits_plan = PlanIndex(n);
  q.logits_row = io_logits_row;
  // With several sequences each keeps its own copy (AfterStep fetched the rows).
  q.host_stale = sequence_logits_ == nullptr && backend_->logits_stay_on_device();
  if (sequence_logits_ != nullptr) {
    std::memcpy(MutableLogits(s), IoLogits(io_logits_row),
                sizeof(float) * static_cast<size_t>(config_.vocab_size));
  }
}

// With one sequence the logits may stay where the backend put them until asked for (logits(),
// a host sample, a snapshot); with several, each sequence keeps its own copy, so the step's
// `rows` rows are fetched now.
Status Engine::AfterStep(int plan, int32_t rows) {
  ++step_count_;
  if (sequence_logits_ == nullptr || !backend_->logits_stay_on_device()) return Status::Ok();
  return backend_->FetchLogits(plan, 0, rows);
}

Status Engine::FetchHostLogits(int32_t sequence) {
  if (!ValidSequence(sequence) || sequences_ == nullptr) return Status::Ok();
  Sequence& q = sequences_[static_cast<size_t>(sequence)];
  if (!q.have_logits || !q.host_stale) return Status::Ok();
  if (q.logits_step != step_count_) {  // cannot happen: a stale sequence is the only one
    return Status::Error(StatusCode::kInternal, "logits overwritten before they were fetched");
  }
  STATICLM_RETURN_IF_ERROR(backend_->FetchLogits(q.logits_plan, q.logits_row, 1));
  q.host_stale = false;
  return Status::Ok();
}

Status Engine::RunChunk(int32_t sequence, const int32_t* tokens, int32_t n_tokens) {
  const int plan = PlanIndex(n_tokens);
  const TensorRegion& io_tokens = plans_[plan].tensors[plans_[plan].tokens_tensor];
  std::memcpy(io_.data() + io_tokens.offset, tokens, sizeof(int32_t) * size_t(n_tokens));
  int32_t position = sequences_[static_cast<size_t>(sequence)].position;
  StepParams step;
  step.n_tokens = n_tokens;
  step.position = position;
  step.sequence = sequence;
  if (plans_[plan].limits.rows_are_sequences) {  // the batched plan, with one row
    step.row_sequences = &sequence;
    step.row_positions = &position;
  }
  STATICLM_RETURN_IF_ERROR(backend_->Execute(plan, step));
  STATICLM_RETURN_IF_ERROR(AfterStep(plan, 1));
  RecordTokens(sequence, tokens, n_tokens, 0);
  return Status::Ok();
}

Status Engine::Prefill(const int32_t* tokens, size_t n_tokens, int32_t sequence) {
  if (backend_ == nullptr) return Status::Error(StatusCode::kInvalidState, "not allocated");
  if (!ValidSequence(sequence)) {
    return Status::Error(StatusCode::kInvalidArgument, "sequence id outside 0..max_batch-1");
  }
  if (n_tokens == 0) return Status::Error(StatusCode::kInvalidArgument, "no tokens to prefill");
  const int32_t position = sequences_[static_cast<size_t>(sequence)].position;
  if (n_tokens > static_cast<size_t>(PositionEnd() - position)) {
    return Status::Error(StatusCode::kContextFull, "the tokens do not fit in the context");
  }
  STATICLM_RETURN_IF_ERROR(CheckTokens(tokens, n_tokens));
  size_t done = 0;
  while (done < n_tokens) {
    size_t chunk = n_tokens - done;
    if (chunk > static_cast<size_t>(limits_.prefill_chunk)) chunk = limits_.prefill_chunk;
    STATICLM_RETURN_IF_ERROR(RunChunk(sequence, tokens + done, static_cast<int32_t>(chunk)));
    done += chunk;
  }
  return Status::Ok();
}

Status Engine::DecodeBatch(const int32_t* sequences, const int32_t* tokens, size_t n) {
  if (backend_ == nullptr) return Status::Error(StatusCode::kInvalidState, "not allocated");
  if (n == 0 || n > static_cast<size_t>(limits_.max_batch) || sequences == nullptr ||
      tokens == nullptr) {
    return Status::Error(StatusCode::kInvalidArgument, "a batch needs 1..max_batch sequences");
  }
  STATICLM_RETURN_IF_ERROR(CheckTokens(tokens, n));
  int32_t positions[kMaxBatch];
  uint64_t seen = 0;
  for (size_t r = 0; r < n; ++r) {
    const int32_t s = sequences[r];
    if (!ValidSequence(s)) {
      return Status::Error(StatusCode::kInvalidArgument, "sequence id outside 0..max_batch-1");
    }
    if ((seen >> s) & 1) {
      return Status::Error(StatusCode::kInvalidArgument, "a sequence appears twice in one batch");
    }
    seen |= uint64_t{1} << s;
    positions[r] = sequences_[static_cast<size_t>(s)].position;
    if (positions[r] >= PositionEnd()) {
      return Status::Error(StatusCode::kContextFull, "a sequence's context is full");
    }
  }
  if (n == 1) return RunChunk(sequences[0], tokens, 1);
  const TensorRegion& io_tokens = plans_[kDecodePlan].tensors[plans_[kDecodePlan].tokens_tensor];
  std::memcpy(io_.data() + io_tokens.offset, tokens, sizeof(int32_t) * n);
  StepParams step;
  step.n_tokens = static_cast<int32_t>(n);
  step.row_sequences = sequences;
  step.row_positions = positions;
  STATICLM_RETURN_IF_ERROR(backend_->Execute(kDecodePlan, step));
  STATICLM_RETURN_IF_ERROR(AfterStep(kDecodePlan, static_cast<int32_t>(n)));
  for (size_t r = 0; r < n; ++r) RecordTokens(sequences[r], tokens + r, 1, static_cast<int>(r));
  return Status::Ok();
}

const float* Engine::logits(int32_t sequence) const {
  if (!ValidSequence(sequence) || sequences_ == nullptr ||
      !sequences_[static_cast<size_t>(sequence)].have_logits) {
    return nullptr;
  }
  Engine* self = const_cast<Engine*>(this);
  if (!self->FetchHostLogits(sequence).ok()) return nullptr;
  return self->MutableLogits(sequence);
}

int32_t Engine::position(int32_t sequence) const {
  if (!ValidSequence(sequence) || sequences_ == nullptr) return sequence == 0 ? 0 : -1;
  return sequences_[static_cast<size_t>(sequence)].position;
}

Status Engine::Sample(const SamplerParams& params, int32_t* token, int32_t sequence) {
  if (!ValidSequence(sequence)) {
    return Status::Error(StatusCode::kInvalidArgument, "sequence id outside 0..max_batch-1");
  }
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
  Rng& rng = sequences_[static_cast<size_t>(sequence)].rng;
  sampler_.rng() = rng;
  Status s = sampler_.Sample(l, tokens, n, params, token);
  rng = sampler_.rng();
  return s;
}

namespace {

// Whether the device does exactly what Sampler would for `p`: greedy, or top-k alone with a
// temperature, k below the vocabulary (else the host draws over the whole vocabulary in id
// order). A repetition penalty, top-p or min-p, and parameters Sampler rejects (it says why),
// stay on the host. Written so that NaN fails every check.
bool DeviceDoes(const SamplerParams& p, int32_t max_k, int32_t vocab, DeviceSampling* out) {
  const bool valid = p.temperature >= 0.0f && !std::isinf(p.temperature) && p.top_k >= 0 &&
                     p.top_p > 0.0f && p.top_p <= 1.0f && p.min_p >= 0.0f && p.min_p <= 1.0f &&
                     p.repetition_window >= 0;
  if (max_k <= 0 || !valid || p.repetition_penalty != 1.0f) return false;
  if (p.temperature == 0.0f) {  // greedy: Sampler applies no filter
    out->top_k = 0;
    return true;
  }
  if (p.top_p != 1.0f || p.min_p != 0.0f || p.top_k <= 0 || p.top_k >= vocab || p.top_k > max_k) {
    return false;
  }
  out->top_k = p.top_k;
  out->temperature = p.temperature;
  return true;
}

}  // namespace

// The device samples only the logits of the backend's last step, i.e. this sequence's latest
// (not ones a snapshot or session restored into host memory).
bool Engine::ChooseDeviceSampling(const SamplerParams& params, int32_t sequence,
                                  DeviceSampling* out) const {
  if (!device_sampling_ || backend_ == nullptr || sequences_ == nullptr) return false;
  const Sequence& q = sequences_[static_cast<size_t>(sequence)];
  if (!q.have_logits || q.logits_step == 0 || q.logits_step != step_count_) return false;
  return DeviceDoes(params, backend_->max_device_top_k(), config_.vocab_size, out);
}

// Sampler draws one number for top-k and none for greedy, and none when it fails; so does
// this, from the sequence's own generator, so seeds, sessions and snapshots continue the same
// random sequence whichever side samples.
Status Engine::SampleOnDevice(int32_t sequence, DeviceSampling sampling, int32_t* token) {
  Sequence& q = sequences_[static_cast<size_t>(sequence)];
  Rng rng = q.rng;
  if (sampling.top_k > 0) sampling.uniform = rng.NextUnit();
  STATICLM_RETURN_IF_ERROR(backend_->SampleOnDevice(q.logits_plan, q.logits_row, sampling, token));
  q.rng = rng;
  return Status::Ok();
}

const int32_t* Engine::history(size_t* n, int32_t sequence) const {
  *n = 0;
  if (!ValidSequence(sequence) || sequences_ == nullptr) return nullptr;
  const int32_t* ring = HistoryOf(sequence);
  const size_t ctx = static_cast<size_t>(limits_.max_context);
  const size_t pos = static_cast<size_t>(sequences_[static_cast<size_t>(sequence)].position);
  if (pos <= ctx) {
    *n = pos;
    return ring;
  }
  // The ring has wrapped: the oldest kept token is at pos % ctx.
  const size_t head = pos % ctx;
  std::memcpy(history_in_order_.get(), ring + head, sizeof(int32_t) * (ctx - head));
  std::memcpy(history_in_order_.get() + (ctx - head), ring, sizeof(int32_t) * head);
  *n = ctx;
  return history_in_order_.get();
}

Detokenizer* Engine::detokenizer(int32_t sequence) {
  if (!ValidSequence(sequence) || sequences_ == nullptr) return nullptr;
  return &sequences_[static_cast<size_t>(sequence)].detokenizer;
}

Status Engine::ResetSequence(int32_t sequence) {
  if (!ValidSequence(sequence)) {
    return Status::Error(StatusCode::kInvalidArgument, "sequence id outside 0..max_batch-1");
  }
  if (sequences_ == nullptr) return Status::Ok();
  Sequence& q = sequences_[static_cast<size_t>(sequence)];
  q.position = 0;
  q.have_logits = false;
  q.logits_step = 0;
  q.host_stale = false;
  q.detokenizer.Reset();
  return Status::Ok();
}

void Engine::Reset() {
  for (int32_t s = 0; s < limits_.max_batch; ++s) (void)ResetSequence(s);
}

void Engine::Seed(uint64_t seed) {
  if (sequences_ == nullptr) return;
  for (int32_t s = 0; s < limits_.max_batch; ++s) sequences_[static_cast<size_t>(s)].rng.Seed(seed);
}

Status Engine::SeedSequence(int32_t sequence, uint64_t seed) {
  if (!ValidSequence(sequence)) {
    return Status::Error(StatusCode::kInvalidArgument, "sequence id outside 0..max_batch-1");
  }
  if (sequences_ != nullptr) sequences_[static_cast<size_t>(sequence)].rng.Seed(seed);
  return Status::Ok();
}

}  // namespace staticlm
