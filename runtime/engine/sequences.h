// Sequences: the state of each conversation a context holds (max_batch of them, ids 0 …
// max_batch − 1) — its position, its token history, its random generator, its text stream, and
// where its last logits are (llama.cpp's per-sequence state in llama_context and
// llama_kv_cache). Its part of the KV cache is the Program's; this holds what the host keeps.
//
// Ownership and lifetime: owned by the Engine. Allocate is init (it allocates every history,
// state and logits copy once); every other call is run phase and never allocates. With one
// sequence the logits are not copied: they stay in the Program's io buffer, which Allocate
// borrows and which must outlive this.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "platform/status.h"
#include "runtime/sampler/rng.h"
#include "runtime/tokenizer/detokenizer.h"

namespace staticlm {

// One conversation's state beside its tokens.
struct Sequence {
  int32_t position = 0;
  bool have_logits = false;
  // The step that made the logits (Program::step_count() then; 0: the backend no longer holds
  // them), its plan and io row. host_stale: they are only in the backend's memory
  // (Backend::logits_stay_on_device) until the Engine fetches them.
  uint64_t logits_step = 0;
  int logits_plan = 0;
  int32_t logits_row = 0;
  bool host_stale = false;
  Detokenizer detokenizer;
  Rng rng;
};

// Where a step left a sequence's logits (see Sequence).
struct StepLogits {
  uint64_t step = 0;
  int plan = 0;
  int32_t row = 0;
  bool host_stale = false;
};

class Sequences {
 public:
  struct Shape {
    int32_t count = 1;        // max_batch
    int32_t max_context = 0;  // the history each keeps
    int32_t vocab = 0;
    bool ring = false;  // positions run past max_context (ring caches): history() unrolls
  };

  // The host bytes Allocate takes for `shape`.
  static uint64_t HostBytes(const Shape& shape);

  // Init: allocates every sequence's state and history, and with several sequences a copy of
  // each one's logits. `io_logits` is the io buffer's first logits row (Program::io_logits),
  // borrowed: steps write there, and with one sequence logits() returns it.
  Status Allocate(const Shape& shape, float* io_logits);
  bool allocated() const { return state_ != nullptr; }

  // Sequence `s` (0 … count − 1; the caller checks the range). Allocate first.
  Sequence& at(int32_t s) { return state_[static_cast<size_t>(s)]; }
  const Sequence& at(int32_t s) const { return state_[static_cast<size_t>(s)]; }

  // Sequence `s`'s history as stored: max_context tokens, token p at p % max_context.
  int32_t* ring(int32_t s) const {
    return history_.get() + static_cast<size_t>(s) * static_cast<size_t>(shape_.max_context);
  }
  // The tokens in `s`'s history, oldest first: all of them, or once more than max_context
  // have been seen (ring caches), the last max_context. Valid until the next call.
  const int32_t* History(int32_t s, size_t* n) const;

  // Where `s`'s last logits are on the host: its own copy with several sequences, else the io
  // buffer's row 0.
  float* logits(int32_t s);

  // After a step: `s`'s n tokens join its history and its position advances; its logits are
  // those `where` says (with several sequences copied now from that io row, which the caller
  // has fetched).
  void Record(int32_t s, const int32_t* tokens, int32_t n, const StepLogits& where);
  // `s` back to an empty conversation (its generator keeps its state).
  void Reset(int32_t s);

 private:
  Shape shape_;
  std::unique_ptr<Sequence[]> state_;            // count
  std::unique_ptr<int32_t[]> history_;           // count × max_context
  std::unique_ptr<int32_t[]> history_in_order_;  // ring caches: History() unrolls into this
  // With several sequences, each one's last logits (vocab floats each); with one they stay in
  // the io buffer where the step wrote them.
  std::unique_ptr<float[]> logits_;
  float* io_logits_ = nullptr;  // borrowed
};

}  // namespace staticlm
