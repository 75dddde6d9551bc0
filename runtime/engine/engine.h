// Engine: the object behind a staticlm_context — a thin facade over the three parts a context
// is made of, which it owns and composes:
//   Model     (model.h)     the mapped file, its config, tokenizer and chat format; read-only
//                           after Load;
//   Program   (program.h)   the plans, the buffers they address, the backend, the memory lock;
//   Sequences (sequences.h) each conversation's position, history, generator and logits.
// Beside them it holds what needs all three: the host sampler's scratch, the snapshot slots
// and session staging (SessionStore), and the memory report. Init (Load, Allocate, SavePlans,
// SetChatFormat) allocates everything; every other call is run phase and never allocates.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/backend.h"
#include "contract/plan.h"
#include "platform/atomic_file.h"
#include "platform/status.h"
#include "runtime/engine/limits.h"
#include "runtime/engine/memory_report.h"
#include "runtime/engine/model.h"
#include "runtime/engine/program.h"
#include "runtime/engine/sequences.h"
#include "runtime/sampler/sampler.h"
#include "runtime/session/session_file.h"
#include "runtime/session/session_store.h"

namespace staticlm {

class Engine {
 public:
  // Init: maps the model, reads its config and tokenizer, builds the plan. Allocates nothing
  // that the plan sizes; enough to report memory (staticlm inspect).
  Status Load(const char* model_path, const EngineLimits& limits);
  // Init: allocates the buffers, prepares the backend, warms up. Call after Load.
  Status Allocate();
  // Init: writes the plans Load built (or loaded) to a plan file bound to this model.
  Status SavePlans(const char* path) const { return program_.SavePlans(path); }

  // Run phase (engine_steps.cpp). See include/staticlm/staticlm.h for each call's contract.
  // The context holds max_batch sequences (ids 0 … max_batch − 1), each with its own cache
  // part, position, history, logits, text stream and random generator; `sequence` picks one.
  Status Prefill(const int32_t* tokens, size_t n_tokens, int32_t sequence = 0);
  // One token for each of n sequences (distinct), decoded together in one step.
  Status DecodeBatch(const int32_t* sequences, const int32_t* tokens, size_t n);
  Status Sample(const SamplerParams& params, int32_t* token, int32_t sequence = 0);
  void Reset();                            // every sequence
  Status ResetSequence(int32_t sequence);  // that one only
  void Seed(uint64_t seed);                // every sequence's generator
  Status SeedSequence(int32_t sequence, uint64_t seed);

  // Snapshots and session files (engine_session.cpp) of one sequence. Run phase: no
  // allocation; the session calls do file I/O. A failed restore or load leaves the
  // conversation as it was. See include/staticlm/staticlm.h.
  Status SaveSnapshot(int32_t slot, int32_t sequence = 0);
  Status RestoreSnapshot(int32_t slot, int32_t sequence = 0);
  Status SaveSession(const char* path, int32_t sequence = 0);
  Status LoadSession(const char* path, int32_t sequence = 0);

  // nullptr before the sequence's first step, or for a sequence out of range.
  const float* logits(int32_t sequence = 0) const;
  // −1 for a sequence out of range.
  int32_t position(int32_t sequence = 0) const;
  // The tokens in the cache's history, oldest first: all of them, or under ring caches
  // (window > 0) once more than max_context have been seen, the last max_context. Valid until
  // the next run-phase call. nullptr (and *n = 0) for a sequence out of range.
  const int32_t* history(size_t* n, int32_t sequence = 0) const;
  // nullptr for a sequence out of range.
  Detokenizer* detokenizer(int32_t sequence = 0);
  int32_t max_batch() const { return program_.limits().max_batch; }

  // The parts, for callers that need one of them whole.
  const Model& model() const { return model_; }
  const Program& program() const { return program_; }

  // Shorthands for the parts' accessors that the C API, the CLI and the tests use.
  const ModelConfig& config() const { return model_.config(); }
  const gguf::GgufFile& file() const { return model_.file(); }
  Tokenizer& tokenizer() { return model_.tokenizer(); }
  const Tokenizer& tokenizer() const { return model_.tokenizer(); }
  const ChatTemplate& chat_template() const { return model_.chat_template(); }
  // Init: see Model::SetChatFormat.
  Status SetChatFormat(const char* name) { return model_.SetChatFormat(name); }
  const MemoryReport& memory() const { return memory_; }
  const Backend* backend() const { return program_.backend(); }
  Backend* backend() { return program_.backend(); }
  const char* init_notes() const { return program_.init_notes(); }
  // The plan a step of n_tokens tokens runs: the decode plan for 1, else the prefill plan.
  const Plan& plan_for(int32_t n_tokens) const {
    return program_.plan(program_.PlanIndex(n_tokens));
  }
  const ArenaReport& arena_for(int32_t n_tokens) const {
    return program_.arena(program_.PlanIndex(n_tokens));
  }
  Sampler& sampler() { return sampler_; }
  // Run phase, for tests and measurements. Sample chooses the token where the logits are when
  // the backend can (greedy, or top-k with temperature, then top-p and min-p; see
  // DeviceSampling) and reads back only its id; false makes it fetch the logits and sample on
  // the host every time.
  void set_device_sampling(bool on) { device_sampling_ = on; }

 private:
  bool ValidSequence(int32_t s) const { return s >= 0 && s < max_batch(); }
  static Status NoSuchSequence();  // the error for a sequence id that is not valid
  // Allocate has given the program its backend and the sequences their state.
  bool allocated() const { return program_.backend() != nullptr && sequences_.allocated(); }
  Sequences::Shape SequencesShape() const;
  void ComputeMemoryReport();
  // An init allocation's refusal, with what the whole context needs; other errors as they are.
  Status OutOfMemory(const Status& refused) const;
  Status CheckTokens(const int32_t* tokens, size_t n) const;
  Status RunChunk(int32_t sequence, const int32_t* tokens, int32_t n_tokens);
  Status FetchHostLogits(int32_t sequence);
  bool ChooseDeviceSampling(const SamplerParams& params, int32_t sequence,
                            DeviceSampling* out) const;
  Status SampleOnDevice(int32_t sequence, DeviceSampling sampling, int32_t* token);
  // The KV cache bytes of one sequence (its part of every cache tensor).
  uint64_t SequenceKvBytes() const;
  Status InitSessionStore();
  Status CheckSessionHeader(const SessionHeader& h) const;
  Status StreamSessionPayload(SessionReader* reader, const SessionHeader& h, int32_t sequence,
                              bool apply);
  Status WriteSessionPayload(AtomicFile* file, StreamChecksum* checksum, int32_t sequence);

  Model model_;
  Program program_;      // borrows model_
  Sequences sequences_;  // borrows program_'s io buffer
  Sampler sampler_;      // the host sampler's scratch, shared by the sequences
  SessionStore session_;
  MemoryReport memory_;
  bool device_sampling_ = true;
};

}  // namespace staticlm
