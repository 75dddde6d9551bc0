// Program: how a Model runs under one set of limits — the plans (decode and prefill), the
// buffers they address (KV cache, arena, io), the backend that executes them, and the memory
// lock (llama.cpp's llama_context compute side, ExecuTorch's Method with its MemoryManager).
// It knows nothing of sequences: a step is tokens and StepParams in, logits in the io buffer
// (or the backend's memory) out.
//
// Ownership and lifetime: owned by the Engine. Build borrows the Model, which must outlive the
// Program (the backend binds the model's mapped weights in place). SetLimits, Build, SavePlans
// and Allocate are init: they may allocate, open files and create threads. Every other call is
// run phase: it never allocates, creates a thread or blocks on I/O.
#pragma once

#include <cstdint>
#include <memory>

#include "backends/backend.h"
#include "contract/plan.h"
#include "platform/aligned_buffer.h"
#include "platform/status.h"
#include "runtime/engine/limits.h"
#include "runtime/engine/memory_report.h"
#include "runtime/engine/model.h"
#include "runtime/plan/memory_planner.h"

namespace staticlm {

class Program {
 public:
  // Plans: [0] decode (one token per step; with several sequences, one row per sequence),
  // [1] prefill (up to prefill_chunk tokens of one sequence). With a chunk of 1 and one
  // sequence the two would be the same, and only [0] is built.
  static constexpr int kDecodePlan = 0;
  static constexpr int kPrefillPlan = 1;

  // Init: copies and checks the limits, before the model is read (a bad limit is reported
  // before a missing file).
  Status SetLimits(const EngineLimits& limits);
  // Init: resolves the model's sliding window into the limits, then builds the plans for
  // `model` (or loads limits.plan_path, whose limits replace the caller's) and sizes the
  // buffers. Allocates no buffer. Borrows `model` from here on.
  Status Build(const Model& model);
  // Init: writes the plans to a plan file bound to the model.
  Status SavePlans(const char* path) const;
  // The buffers the plans size (weights, KV cache by layer kind, arena, io); Build first.
  void ReportBuffers(MemoryReport* report) const;
  // Init: allocates the KV cache, arena and io buffers once, prepares the backend ("auto":
  // Vulkan, else the CPU with a note saying why), and locks the memory when asked.
  Status Allocate();

  // Run phase: writes step.n_tokens `tokens` into plan `plan`'s io token tensor, executes the
  // plan and counts the step. The logits are then in the io buffer, or, where the backend
  // keeps them (logits_stay_on_device), there until FetchLogits.
  Status Run(int plan, const int32_t* tokens, const StepParams& step);
  // Run phase: copies rows of the last step's logits to the io buffer (Backend::FetchLogits).
  Status FetchLogits(int plan, int32_t first_row, int32_t n_rows) {
    return backend_->FetchLogits(plan, first_row, n_rows);
  }
  // Row `row` of the logits in the host io buffer (vocab floats; every plan puts them at the
  // same offset). Allocate first.
  float* io_logits(int32_t row);
  // Successful steps so far; a step's logits are the backend's until the next step.
  uint64_t step_count() const { return step_count_; }

  // The plan a step of n_tokens tokens runs: the decode plan for 1, else the prefill plan.
  int PlanIndex(int32_t n_tokens) const { return n_tokens == 1 ? kDecodePlan : n_plans_ - 1; }
  int n_plans() const { return n_plans_; }
  const Plan& plan(int index) const { return plans_[index]; }
  const ArenaReport& arena(int index) const { return arenas_[index]; }
  // Ring caches take positions without bound, up to int32's end; a static cache max_context.
  bool positions_unbounded() const { return PlanPositionsUnbounded(plans_[kDecodePlan]); }
  int32_t PositionEnd() const;
  // The plans' hash, in order (runtime/plan/plan_hash.h): what session files are bound to.
  uint64_t PlansHash() const;
  // The limits as resolved by Build (a plan file's, the model's window).
  const EngineLimits& limits() const { return limits_; }
  // nullptr before Allocate.
  Backend* backend() { return backend_.get(); }
  const Backend* backend() const { return backend_.get(); }
  // What init wants the user to know, "; "-separated: why "auto" did not use Vulkan, why
  // memory could not be locked. Empty when nothing.
  const char* init_notes() const { return init_notes_; }

 private:
  Status CheckLimits() const;
  Status CopyPipelineCachePath(const EngineLimits& limits);
  Status BuildPlans();
  Status LoadPlans(const char* path);
  Status CheckLoadedPlans() const;
  void SplitKvBytes(MemoryReport* report) const;
  BackendOptions MakeBackendOptions() const;
  Status PrepareBackend(const BufferBinding& binding);
  // Creates backend `name` into backend_ and prepares it with both plans.
  Status TryBackend(const char* name, const BufferBinding& binding);
  void LockMemory(const BufferBinding& binding);
  void AddInitNote(const char* note);
  uint64_t BufferBytes(BufferId id) const;

  const Model* model_ = nullptr;  // borrowed at Build
  EngineLimits limits_;
  char pipeline_cache_path_[512] = {0};  // owned copy of limits.pipeline_cache_path
  Plan plans_[2];
  ArenaReport arenas_[2];
  int n_plans_ = 0;
  char plan_kernels_[32] = {0};  // the kernel choice a loaded plan file names
  AlignedBuffer kv_cache_;
  AlignedBuffer arena_;
  AlignedBuffer io_;
  std::unique_ptr<Backend> backend_;
  char init_notes_[640] = {0};
  uint64_t step_count_ = 0;
};

}  // namespace staticlm
