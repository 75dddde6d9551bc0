// Engine: one loaded model with its plan, buffers, backend, tokenizer and sampler — the object
// behind a staticlm_context. Init allocates everything; every other call is run phase and
// never allocates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "backends/backend.h"
#include "contract/plan.h"
#include "platform/aligned_buffer.h"
#include "platform/atomic_file.h"
#include "platform/status.h"
#include "runtime/gguf/gguf_file.h"
#include "runtime/model/model_config.h"
#include "runtime/plan/memory_planner.h"
#include "runtime/sampler/sampler.h"
#include "runtime/session/session_file.h"
#include "runtime/session/session_store.h"
#include "runtime/tokenizer/chat_template.h"
#include "runtime/tokenizer/detokenizer.h"
#include "runtime/tokenizer/tokenizer.h"

namespace staticlm {

struct EngineLimits {
  int32_t max_context = 2048;
  int32_t max_batch = 1;
  int32_t prefill_chunk = 64;
  int32_t max_prompt_bytes = 16384;
  DType kv_dtype = DType::kF16;
  int32_t threads = 1;
  bool reference_kernels = false;
  bool busy_wait = false;
  bool pin_threads = false;
  // A plan file to load instead of building plans; its limits replace max_context,
  // max_batch, prefill_chunk and kv_dtype above. Borrowed for the Load call.
  const char* plan_path = nullptr;
  // Fusion passes not to apply (runtime/plan/fusion_passes.h); the rest are applied.
  uint32_t disabled_fusions = 0;
  // The backend by name: "cpu", "vulkan" or "auto" (vulkan if it prepares, else cpu).
  char backend[16] = "cpu";
  int32_t device = 0;  // Vulkan device index
  // Pre-fault and mlock the weights, cache, arena and io at init (a note says when the system
  // does not allow locking).
  bool lock_memory = false;
  // Cache policy (0, 0: static). See include/staticlm/staticlm.h.
  int32_t window = 0;  // −1: from the model's metadata
  int32_t sinks = 0;
  int32_t global_every = 0;
  // Snapshot slots (SaveSnapshot / RestoreSnapshot), each as large as the KV cache plus the
  // history and logits, allocated at init. 0: none.
  int32_t max_snapshots = 0;
  // Vulkan: a pipeline cache file, loaded at init when valid and written after; nullptr:
  // "<plan_path>.vkcache" when plan_path is set, else none. Borrowed for the Init call.
  const char* pipeline_cache_path = nullptr;
  // CPU: 0 (f32 activations), 16 or 8 (BackendOptions::quantized_activations).
  int32_t activation_bits = 0;
};

struct MemoryReport {
  uint64_t weights_bytes = 0;
  uint64_t kv_cache_bytes = 0;
  uint64_t arena_bytes = 0;
  uint64_t io_bytes = 0;
  uint64_t host_bytes = 0;
  uint64_t snapshot_bytes = 0;  // snapshot slots and the session file staging buffer
  uint64_t total_bytes = 0;
  uint64_t kv_ring_bytes = 0;        // kv_cache_bytes of the layers with a ring cache
  uint64_t kv_global_bytes = 0;      // … and of those that keep the whole context
  uint64_t kv_all_global_bytes = 0;  // the KV cache with every layer global (StaticCache)
  ArenaReport arena;
};

class Engine {
 public:
  // Init: maps the model, reads its config and tokenizer, builds the plan. Allocates nothing
  // that the plan sizes; enough to report memory (staticlm inspect).
  Status Load(const char* model_path, const EngineLimits& limits);
  // Init: allocates the buffers, prepares the backend, warms up. Call after Load.
  Status Allocate();
  // Init: writes the plans Load built (or loaded) to a plan file bound to this model.
  Status SavePlans(const char* path) const;

  // Run phase. See include/staticlm/staticlm.h for each call's contract. The context holds
  // max_batch sequences (ids 0 … max_batch − 1), each with its own cache part, position,
  // history, logits, text stream and random generator; `sequence` picks one.
  Status Prefill(const int32_t* tokens, size_t n_tokens, int32_t sequence = 0);
  // One token for each of n sequences (distinct), decoded together in one step.
  Status DecodeBatch(const int32_t* sequences, const int32_t* tokens, size_t n);
  Status Sample(const SamplerParams& params, int32_t* token, int32_t sequence = 0);
  void Reset();                            // every sequence
  Status ResetSequence(int32_t sequence);  // that one only
  void Seed(uint64_t seed);                // every sequence's generator
  Status SeedSequence(int32_t sequence, uint64_t seed);

  // Snapshots and session files (runtime/engine/engine_session.cpp) of one sequence. Run
  // phase: no allocation; the session calls do file I/O. A failed restore or load leaves the
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
  int32_t max_batch() const { return limits_.max_batch; }

  const ModelConfig& config() const { return config_; }
  const MemoryReport& memory() const { return memory_; }
  const Backend* backend() const { return backend_.get(); }
  Backend* backend() { return backend_.get(); }
  // What init wants the user to know, "; "-separated: why "auto" did not use Vulkan, why
  // memory could not be locked. Empty when nothing.
  const char* init_notes() const { return init_notes_; }
  // The plan a step of n_tokens tokens runs: the decode plan for 1, else the prefill plan.
  const Plan& plan_for(int32_t n_tokens) const { return plans_[PlanIndex(n_tokens)]; }
  const ArenaReport& arena_for(int32_t n_tokens) const { return arenas_[PlanIndex(n_tokens)]; }
  const gguf::GgufFile& file() const { return file_; }
  Tokenizer& tokenizer() { return tokenizer_; }
  const Tokenizer& tokenizer() const { return tokenizer_; }
  const ChatTemplate& chat_template() const { return chat_template_; }
  // Init (engine_chat.cpp): forces the chat format `name` ("chatml", "gemma"), or with nullptr
  // or "" goes back to the file's template. Allocates. kInvalidArgument for an unknown name.
  Status SetChatFormat(const char* name);
  // nullptr for a sequence out of range.
  Detokenizer* detokenizer(int32_t sequence = 0);
  Sampler& sampler() { return sampler_; }
  // Run phase, for tests and measurements. Sample chooses the token where the logits are when
  // the backend can (greedy, or top-k with temperature alone; see Backend::SampleOnDevice) and
  // reads back only its id; false makes it fetch the logits and sample on the host every time.
  void set_device_sampling(bool on) { device_sampling_ = on; }

 private:
  // Plans: [0] decode (one token per step), [1] prefill (up to prefill_chunk tokens). With a
  // chunk of 1 the two would be the same, and only [0] is built.
  static constexpr int kDecodePlan = 0;
  static constexpr int kPrefillPlan = 1;
  int PlanIndex(int32_t n_tokens) const { return n_tokens == 1 ? kDecodePlan : n_plans_ - 1; }
  // One conversation: its tokens are in history_, its cache in its part of the KV cache.
  struct Sequence {
    int32_t position = 0;
    bool have_logits = false;
    // The step that made the logits (step_count_ then; 0: the backend no longer holds them),
    // its plan and io row. host_stale: they are only in the backend's memory
    // (Backend::logits_stay_on_device) until FetchHostLogits copies them.
    uint64_t logits_step = 0;
    int logits_plan = 0;
    int32_t logits_row = 0;
    bool host_stale = false;
    Detokenizer detokenizer;
    Rng rng;
  };
  bool ValidSequence(int32_t s) const { return s >= 0 && s < limits_.max_batch; }
  int32_t* HistoryOf(int32_t s) const {
    return history_.get() + static_cast<size_t>(s) * static_cast<size_t>(limits_.max_context);
  }
  int32_t PositionEnd() const;
  Status CheckTokens(const int32_t* tokens, size_t n) const;
  void RecordTokens(int32_t s, const int32_t* tokens, int32_t n, int io_logits_row);
  Status BuildPlans();
  // What the chat template writes for {{ bos_token }}: nothing when the tokenizer prepends BOS.
  std::string_view ChatBosText() const;
  Status LoadPlans(const char* path);
  Status CheckLoadedPlans() const;
  BackendOptions MakeBackendOptions() const;
  Status PrepareBackend(const BufferBinding& binding);
  void LockMemory(const BufferBinding& binding);
  void AddInitNote(const char* note);
  Status CopyPipelineCachePath(const EngineLimits& limits);
  Status CheckLimits() const;
  Status RunChunk(int32_t sequence, const int32_t* tokens, int32_t n_tokens);
  Status AfterStep(int plan, int32_t rows);
  Status FetchHostLogits(int32_t sequence);
  bool ChooseDeviceSampling(const SamplerParams& params, int32_t sequence,
                            DeviceSampling* out) const;
  Status SampleOnDevice(int32_t sequence, DeviceSampling sampling, int32_t* token);
  void ComputeMemoryReport();
  void SplitKvBytes(const Plan& plan);
  // The KV cache bytes of one sequence (its part of every cache tensor).
  uint64_t SequenceKvBytes() const;
  Status InitSessionStore();
  uint64_t ModelFingerprint();
  float* MutableLogits(int32_t sequence);
  float* IoLogits(int row);
  Status CheckSessionHeader(const SessionHeader& h) const;
  Status StreamSessionPayload(SessionReader* reader, const SessionHeader& h, int32_t sequence,
                              bool apply);
  Status WriteSessionPayload(AtomicFile* file, StreamChecksum* checksum, int32_t sequence);

  EngineLimits limits_;
  gguf::GgufFile file_;
  ModelConfig config_;
  Tokenizer tokenizer_;
  ChatTemplate chat_template_;
  Sampler sampler_;
  Plan plans_[2];
  ArenaReport arenas_[2];
  int n_plans_ = 0;
  char plan_kernels_[32] = {0};          // the kernel choice a loaded plan file names
  char pipeline_cache_path_[512] = {0};  // owned copy of limits.pipeline_cache_path
  MemoryReport memory_;
  AlignedBuffer kv_cache_;
  AlignedBuffer arena_;
  AlignedBuffer io_;
  std::unique_ptr<Backend> backend_;
  char init_notes_[640] = {0};
  std::unique_ptr<Sequence[]> sequences_;  // max_batch
  // Per sequence, max_context tokens, token p at p % max_context: what is in the cache (the
  // last max_context tokens under ring caches).
  std::unique_ptr<int32_t[]> history_;
  std::unique_ptr<int32_t[]> history_in_order_;  // ring caches: history() unrolls into this
  // With max_batch > 1, each sequence's last logits (vocab floats each); with one sequence they
  // stay in the io buffer where the step wrote them.
  std::unique_ptr<float[]> sequence_logits_;
  uint64_t step_count_ = 0;  // successful steps so far (Sequence::logits_step)
  bool device_sampling_ = true;
  SessionStore session_;
};

}  // namespace staticlm
