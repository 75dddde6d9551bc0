// Sequences: each conversation's position, history and logits. Allocate is init; the rest
// never allocates.
#include "runtime/engine/sequences.h"

#include <cstring>

namespace staticlm {

uint64_t Sequences::HostBytes(const Shape& shape) {
  // Each sequence's history, and under ring caches an in-order copy (History()); with several
  // sequences, each one's logits.
  const uint64_t count = static_cast<uint64_t>(shape.count);
  const uint64_t history_copies = count + (shape.ring ? 1 : 0);
  const uint64_t logits = count > 1 ? count * uint64_t(shape.vocab) * sizeof(float) : 0;
  return history_copies * static_cast<uint64_t>(shape.max_context) * sizeof(int32_t) + logits +
         count * sizeof(Sequence);
}

Status Sequences::Allocate(const Shape& shape, float* io_logits) {
  shape_ = shape;
  io_logits_ = io_logits;
  const size_t count = static_cast<size_t>(shape.count);
  const size_t context = static_cast<size_t>(shape.max_context);
  state_ = std::make_unique<Sequence[]>(count);
  history_ = std::make_unique<int32_t[]>(count * context);
  if (count > 1) logits_ = std::make_unique<float[]>(count * static_cast<size_t>(shape.vocab));
  if (shape.ring) history_in_order_ = std::make_unique<int32_t[]>(context);
  return Status::Ok();
}

float* Sequences::logits(int32_t s) {
  if (logits_ == nullptr) return io_logits_;
  return logits_.get() + static_cast<size_t>(s) * static_cast<size_t>(shape_.vocab);
}

void Sequences::Record(int32_t s, const int32_t* tokens, int32_t n, const StepLogits& where) {
  Sequence& q = at(s);
  int32_t* history = ring(s);
  for (int32_t i = 0; i < n; ++i) {
    history[static_cast<size_t>((int64_t{q.position} + i) % shape_.max_context)] = tokens[i];
  }
  q.position += n;
  q.have_logits = true;
  q.logits_step = where.step;
  q.logits_plan = where.plan;
  q.logits_row = where.row;
  // With several sequences each keeps its own copy, already fetched from the backend.
  q.host_stale = logits_ == nullptr && where.host_stale;
  if (logits_ != nullptr) {
    const size_t vocab = static_cast<size_t>(shape_.vocab);
    std::memcpy(logits(s), io_logits_ + static_cast<size_t>(where.row) * vocab,
                sizeof(float) * vocab);
  }
}

const int32_t* Sequences::History(int32_t s, size_t* n) const {
  const int32_t* stored = ring(s);
  const size_t ctx = static_cast<size_t>(shape_.max_context);
  const size_t pos = static_cast<size_t>(at(s).position);
  if (pos <= ctx) {
    *n = pos;
    return stored;
  }
  // The ring has wrapped: the oldest kept token is at pos % ctx.
  const size_t head = pos % ctx;
  std::memcpy(history_in_order_.get(), stored + head, sizeof(int32_t) * (ctx - head));
  std::memcpy(history_in_order_.get() + (ctx - head), stored, sizeof(int32_t) * head);
  *n = ctx;
  return history_in_order_.get();
}

void Sequences::Reset(int32_t s) {
  Sequence& q = at(s);
  q.position = 0;
  q.have_logits = false;
  q.logits_step = 0;
  q.host_stale = false;
  q.detokenizer.Reset();
}

}  // namespace staticlm
