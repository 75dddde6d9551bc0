// Program: the limits, building the plans, sizing and allocating the buffers, preparing the
// backend, and the run-phase step. Plan files are in program_plan_file.cpp.
#include "runtime/engine/program.h"

#include <climits>
#include <cstdio>
#include <cstring>

#include "backends/backend_registry.h"
#include "platform/memory_lock.h"
#include "runtime/plan/decoder_plan_builder.h"
#include "runtime/plan/fusion_passes.h"
#include "runtime/plan/plan_hash.h"
#include "runtime/session/snapshot_slots.h"

namespace staticlm {
namespace {

// Sinks on a model with a window of its own. Its sliding layers are bounded already and keep
// the model's window without sinks: scoring the first tokens there would show them keys the
// model was never trained to see. Its global layers, which would keep the whole context, keep
// the sinks and the last W − S positions (StreamingLLM), W the window asked for, so that
// positions go on without end in constant memory. A model whose every layer slides has no such
// layers: its cache is bounded as it is.
Status BoundGlobalLayersWithSinks(const ModelConfig& c, EngineLimits* limits) {
  if (c.sliding_window_pattern < 2) {
    return Status::Error(StatusCode::kUnsupported,
                         "%s slides over a window of %d tokens on every layer: its cache is "
                         "bounded without sinks (--sinks)",
                         c.arch->name, c.sliding_window);
  }
  if (limits->window < c.sliding_window) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "--sinks %d bounds %s's global layers to --window W tokens, and W must "
                         "be at least the model's sliding window of %d",
                         limits->sinks, c.arch->name, c.sliding_window);
  }
  limits->global_window = limits->window;
  limits->window = c.sliding_window;
  limits->global_every = c.sliding_window_pattern;
  return Status::Ok();
}

// The sliding window a model's metadata gives, and which layers keep a global cache (every
// `pattern`-th layer: Gemma's hybrid cache; no pattern: Mistral's window slides on every
// layer). A model whose metadata gives a window slides by design, in any family, where a cache
// that did not forget would compute another model: the window is always the model's, and
// `--window model` asks for it by name. A context no longer than the window needs no ring:
// every layer keeps it all, which is the same attention.
Status UseModelWindow(const ModelConfig& c, EngineLimits* limits) {
  const bool intrinsic = c.sliding_window > 0;
  if (intrinsic && limits->sinks > 0) return BoundGlobalLayersWithSinks(c, limits);
  if (limits->window > 0 && intrinsic && limits->window != c.sliding_window) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "%s layers slide over the model's window of %d tokens; --window %d "
                         "cannot change it",
                         c.arch->name, c.sliding_window, limits->window);
  }
  if (limits->window >= 0 && !intrinsic) return Status::Ok();
  if (c.sliding_window == 0) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "the model's metadata gives no sliding window "
                         "(%s.attention.sliding_window)",
                         c.arch->name);
  }
  const bool ring = c.sliding_window < limits->max_context;
  limits->window = ring ? c.sliding_window : 0;
  limits->global_every = ring ? c.sliding_window_pattern : 0;
  return Status::Ok();
}

}  // namespace

Status Program::SetLimits(const EngineLimits& limits) {
  limits_ = limits;
  STATICLM_RETURN_IF_ERROR(CopyPipelineCachePath(limits));
  return CheckLimits();
}

Status Program::CheckLimits() const {
  const EngineLimits& l = limits_;
  if (l.max_context <= 0 || l.max_batch <= 0 || l.prefill_chunk <= 0 || l.max_prompt_bytes <= 0 ||
      l.threads <= 0) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "limits must be positive (context %d, batch %d, chunk %d, prompt bytes "
                         "%d, threads %d)",
                         l.max_context, l.max_batch, l.prefill_chunk, l.max_prompt_bytes,
                         l.threads);
  }
  if (std::strcmp(l.backend, "cpu") != 0 && std::strcmp(l.backend, "vulkan") != 0 &&
      std::strcmp(l.backend, "cuda") != 0 && std::strcmp(l.backend, "auto") != 0) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "unknown backend '%s' (expected cpu, vulkan, cuda or auto)", l.backend);
  }
  if (l.device < 0) {
    return Status::Error(StatusCode::kInvalidArgument, "device %d is negative", l.device);
  }
  if (l.window < -1 || l.sinks < 0 || l.global_every < 0) {
    return Status::Error(StatusCode::kInvalidArgument, "window %d and sinks %d must be >= 0",
                         l.window, l.sinks);
  }
  if (l.sinks > 0 && l.window == 0) {
    return Status::Error(StatusCode::kInvalidArgument, "sinks %d need a window (--window)",
                         l.sinks);
  }
  if (l.max_snapshots < 0 || l.max_snapshots > SnapshotSlots::kMaxSlots) {
    return Status::Error(StatusCode::kInvalidArgument, "max_snapshots %d is outside 0..%d",
                         l.max_snapshots, SnapshotSlots::kMaxSlots);
  }
  if (l.activation_bits != 0 && l.activation_bits != 8 && l.activation_bits != 16) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "activation bits %d: expected 0 (f32), 16 or 8", l.activation_bits);
  }
  if (l.max_batch > kMaxBatch) {
    return Status::Error(StatusCode::kInvalidArgument, "max batch %d is more than %d", l.max_batch,
                         kMaxBatch);
  }
  if (l.threads > 256) {
    return Status::Error(StatusCode::kInvalidArgument, "threads %d is more than 256", l.threads);
  }
  return Status::Ok();
}

// The path is borrowed for the call; the program keeps its own copy (default: beside the plan).
Status Program::CopyPipelineCachePath(const EngineLimits& limits) {
  int n = 0;
  if (limits.pipeline_cache_path != nullptr) {
    n = std::snprintf(pipeline_cache_path_, sizeof(pipeline_cache_path_), "%s",
                      limits.pipeline_cache_path);
  } else if (limits.plan_path != nullptr) {
    n = std::snprintf(pipeline_cache_path_, sizeof(pipeline_cache_path_), "%s.vkcache",
                      limits.plan_path);
  } else {
    pipeline_cache_path_[0] = '\0';
  }
  limits_.pipeline_cache_path = pipeline_cache_path_;
  if (n < 0 || size_t(n) >= sizeof(pipeline_cache_path_)) {
    pipeline_cache_path_[0] = '\0';
    return Status::Error(StatusCode::kInvalidArgument, "pipeline cache path is too long");
  }
  return Status::Ok();
}

Status Program::Build(const Model& model) {
  model_ = &model;
  STATICLM_RETURN_IF_ERROR(UseModelWindow(model.config(), &limits_));
  if (limits_.plan_path != nullptr) return LoadPlans(limits_.plan_path);
  return BuildPlans();
}

Status Program::BuildPlans() {
  PlanLimits plan_limits;
  plan_limits.max_context = limits_.max_context;
  plan_limits.max_batch = limits_.max_batch;
  plan_limits.kv_dtype = limits_.kv_dtype;
  plan_limits.window = limits_.window;
  plan_limits.sinks = limits_.sinks;
  plan_limits.global_every = limits_.global_every;
  plan_limits.global_window = limits_.global_window;
  plan_limits.cache_chunk = limits_.prefill_chunk;  // both plans share the prefill's rings
  // With several sequences the decode plan takes one row per sequence (a batched step), and a
  // prefill plan of one sequence's tokens is always built beside it.
  const bool batched = limits_.max_batch > 1;
  n_plans_ = limits_.prefill_chunk > 1 || batched ? 2 : 1;
  for (int i = 0; i < n_plans_; ++i) {
    plan_limits.rows_are_sequences = i == kDecodePlan && batched;
    plan_limits.prefill_chunk = i == kPrefillPlan ? limits_.prefill_chunk : limits_.max_batch;
    STATICLM_RETURN_IF_ERROR(BuildDecoderPlan(model_->file(), model_->config(), plan_limits,
                                              kAllFusions & ~limits_.disabled_fusions, &plans_[i],
                                              &arenas_[i]));
  }
  return Status::Ok();
}

// The bytes a buffer needs to serve every plan.
uint64_t Program::BufferBytes(BufferId id) const {
  uint64_t most = 0;
  for (int i = 0; i < n_plans_; ++i) {
    uint64_t b = plans_[i].buffer_bytes[static_cast<int>(id)];
    most = b > most ? b : most;
  }
  return most;
}

void Program::ReportBuffers(MemoryReport* report) const {
  report->weights_bytes = BufferBytes(BufferId::kWeights);
  report->kv_cache_bytes = BufferBytes(BufferId::kKvCache);
  report->arena_bytes = BufferBytes(BufferId::kArena);
  report->io_bytes = BufferBytes(BufferId::kIo);
  const Plan* plans[2] = {&plans_[0], &plans_[1]};
  report->packed_weights_bytes =
      BackendPackedWeightBytes(limits_.backend, MakeBackendOptions(), plans, n_plans_);
  report->arena = arenas_[n_plans_ - 1];  // the prefill plan's, the larger
  SplitKvBytes(report);
}

// The KV cache by layer kind, from the cache tensors each layer's store writes in the prefill
// plan, and the all-global equivalent from the builder's exact bound of a plan without a window.
void Program::SplitKvBytes(MemoryReport* report) const {
  const Plan& plan = plans_[n_plans_ - 1];
  report->kv_ring_bytes = report->kv_global_bytes = 0;
  for (const Op& op : plan.ops) {
    if (op.kind != OpKind::kKvStore) continue;
    uint64_t& kind = op.params.cache_policy == CachePolicy::kStatic ? report->kv_global_bytes
                                                                    : report->kv_ring_bytes;
    for (int i = 0; i < op.n_outputs; ++i) {
      // A loaded plan file is reported before the backend validates it: skip what it cannot
      // hold (Prepare then refuses the plan).
      if (op.outputs[i] >= plan.tensors.size()) continue;
      kind += (plan.tensors[op.outputs[i]].bytes() + kPlanAlignment - 1) / kPlanAlignment *
              kPlanAlignment;
    }
  }
  PlanLimits all_global = plan.limits;
  all_global.window = all_global.sinks = all_global.global_every = all_global.global_window = 0;
  report->kv_all_global_bytes =
      DecoderBufferBound(model_->config(), all_global, BufferId::kKvCache);
}

uint64_t Program::PlansHash() const {
  uint64_t hash = HashPlan(plans_[0]);
  for (int i = 1; i < n_plans_; ++i) hash = HashPlan(plans_[i], hash);
  return hash;
}

int32_t Program::PositionEnd() const {
  return positions_unbounded() ? INT32_MAX : limits_.max_context;
}

Status Program::Allocate() {
  const Pages pages = limits_.huge_pages ? Pages::kHugeWherePossible : Pages::kNormal;
  STATICLM_RETURN_IF_ERROR(
      kv_cache_.Allocate(BufferBytes(BufferId::kKvCache), 64, "the KV cache", pages));
  STATICLM_RETURN_IF_ERROR(arena_.Allocate(BufferBytes(BufferId::kArena), 64, "the arena", pages));
  STATICLM_RETURN_IF_ERROR(io_.Allocate(BufferBytes(BufferId::kIo), 64, "the io buffer", pages));
  BufferBinding binding;
  binding.data[int(BufferId::kWeights)] = const_cast<uint8_t*>(model_->file().tensor_data());
  binding.bytes[int(BufferId::kWeights)] = model_->file().tensor_data_bytes();
  binding.data[int(BufferId::kKvCache)] = kv_cache_.data();
  binding.bytes[int(BufferId::kKvCache)] = kv_cache_.size();
  binding.data[int(BufferId::kArena)] = arena_.data();
  binding.bytes[int(BufferId::kArena)] = arena_.size();
  binding.data[int(BufferId::kIo)] = io_.data();
  binding.bytes[int(BufferId::kIo)] = io_.size();
  STATICLM_RETURN_IF_ERROR(PrepareBackend(binding));
  if (limits_.lock_memory) LockMemory(binding);
  return Status::Ok();
}

void Program::AddInitNote(const char* note) {
  size_t used = std::strlen(init_notes_);
  std::snprintf(init_notes_ + used, sizeof(init_notes_) - used, "%s%s", used > 0 ? "; " : "", note);
}

// --lock: every buffer resident and locked before the first step, so a benchmark sees no page
// faults. A refusal is a note, not an error: the run is still correct, only less steady.
void Program::LockMemory(const BufferBinding& binding) {
  const char* why = "";
  for (int b = 0; b < kBufferCount; ++b) {
    if (!PrefaultAndLock(binding.data[b], binding.bytes[b], &why)) {
      char note[200];
      std::snprintf(note, sizeof(note), "memory not locked: %s", why);
      AddInitNote(note);
      return;
    }
  }
}

BackendOptions Program::MakeBackendOptions() const {
  BackendOptions options;
  options.threads = limits_.threads;
  options.busy_wait = limits_.busy_wait;
  options.pin_threads = limits_.pin_threads;
  options.profile_ops = limits_.profile_ops;
  options.huge_pages = limits_.huge_pages;
  options.reference_kernels = limits_.reference_kernels;
  options.quantized_activations = limits_.activation_bits;
  options.device = limits_.device;
  options.logits_on_request = true;  // fetched when asked for (FetchLogits)
  std::memcpy(options.kernels, plan_kernels_, sizeof(options.kernels));
  std::memcpy(options.isa, limits_.isa, sizeof(options.isa));
  std::memcpy(options.pipeline_cache_path, pipeline_cache_path_,
              sizeof(options.pipeline_cache_path));
  return options;
}

// "auto" tries CUDA, then Vulkan, then the CPU, and says in one init note which it chose and
// why those before it were not used, e.g. "backend: vulkan (cuda: no CUDA device found)".
Status Program::PrepareBackend(const BufferBinding& binding) {
  if (std::strcmp(limits_.backend, "auto") != 0) {
    STATICLM_RETURN_IF_ERROR(TryBackend(limits_.backend, binding));
    if (backend_->prepare_note()[0] != '\0') AddInitNote(backend_->prepare_note());
    return Status::Ok();
  }
  static const char* const kAutoOrder[] = {"cuda", "vulkan", "cpu"};
  char why[400] = {0};  // "cuda: …; vulkan: …", the reasons so far
  Status s;
  for (const char* name : kAutoOrder) {
    s = TryBackend(name, binding);
    if (s.ok()) {
      char note[480];
      std::snprintf(note, sizeof(note), why[0] != '\0' ? "backend: %s (%s)" : "backend: %s%s", name,
                    why);
      AddInitNote(note);
      if (backend_->prepare_note()[0] != '\0') AddInitNote(backend_->prepare_note());
      return s;
    }
    backend_.reset();
    // CreateBackend refuses a name this build lacks with kInvalidArgument.
    const char* reason = s.code() == StatusCode::kInvalidArgument &&
                                 std::strstr(s.message(), "unknown backend") != nullptr
                             ? "not in this build"
                             : s.message();
    size_t used = std::strlen(why);
    std::snprintf(why + used, sizeof(why) - used, "%s%s: %s", used > 0 ? "; " : "", name, reason);
  }
  return s;
}

Status Program::TryBackend(const char* name, const BufferBinding& binding) {
  const Plan* plans[2] = {&plans_[0], &plans_[1]};
  STATICLM_RETURN_IF_ERROR(CreateBackend(name, MakeBackendOptions(), &backend_));
  return backend_->Prepare(plans, n_plans_, binding);
}

float* Program::io_logits(int32_t row) {
  const Plan& plan = plans_[kDecodePlan];
  float* first = reinterpret_cast<float*>(io_.data() + plan.tensors[plan.logits_tensor].offset);
  return first + static_cast<size_t>(row) * static_cast<size_t>(model_->config().vocab_size);
}

Status Program::Run(int plan, const int32_t* tokens, const StepParams& step) {
  const TensorRegion& io_tokens = plans_[plan].tensors[plans_[plan].tokens_tensor];
  std::memcpy(io_.data() + io_tokens.offset, tokens, sizeof(int32_t) * size_t(step.n_tokens));
  STATICLM_RETURN_IF_ERROR(backend_->Execute(plan, step));
  ++step_count_;
  return Status::Ok();
}

}  // namespace staticlm
