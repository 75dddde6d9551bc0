#include "runtime/engine/engine.h"

#include <climits>
#include <cstdio>
#include <cstring>

#include "backends/backend_registry.h"
#include "contract/plan_validation.h"
#include "platform/memory_lock.h"
#include "runtime/model/model_hash.h"
#include "runtime/plan/decoder_plan_builder.h"
#include "runtime/plan/fusion_passes.h"
#include "runtime/plan/plan_file.h"
#include "runtime/tokenizer/tokenizer_from_gguf.h"

namespace staticlm {
namespace {

// The bytes a buffer needs to serve every plan.
uint64_t Bytes(const Plan* plans, int n_plans, BufferId id) {
  uint64_t most = 0;
  for (int i = 0; i < n_plans; ++i) {
    uint64_t b = plans[i].buffer_bytes[static_cast<int>(id)];
    most = b > most ? b : most;
  }
  return most;
}

// The sliding window a model's metadata gives, and which layers keep a global cache (every
// `pattern`-th layer: Gemma's hybrid cache): `--window model`, and always for a family whose
// layers slide by design (Architecture::swa_pattern), where a cache that did not forget would
// compute another model. A context no longer than the window needs no ring: every layer keeps
// it all, which is the same attention.
Status UseModelWindow(const ModelConfig& c, EngineLimits* limits) {
  const bool intrinsic = c.arch->swa_pattern > 0 && c.sliding_window > 0;
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
  if (intrinsic && limits->sinks > 0) {
    return Status::Error(StatusCode::kUnsupported, "%s does not support sinks (--sinks)",
                         c.arch->name);
  }
  const bool ring = c.sliding_window < limits->max_context;
  limits->window = ring ? c.sliding_window : 0;
  limits->global_every = ring ? c.sliding_window_pattern : 0;
  return Status::Ok();
}

}  // namespace

Status Engine::CheckLimits() const {
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
      std::strcmp(l.backend, "auto") != 0) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "unknown backend '%s' (expected cpu, vulkan or auto)", l.backend);
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
  if (l.sinks > 0 && l.kv_dtype == kDTypeKvQ4) {
    return Status::Error(StatusCode::kUnsupported, "a q4 KV cache does not support sinks");
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

Status Engine::Load(const char* model_path, const EngineLimits& limits) {
  limits_ = limits;
  STATICLM_RETURN_IF_ERROR(CopyPipelineCachePath(limits));
  STATICLM_RETURN_IF_ERROR(CheckLimits());
  STATICLM_RETURN_IF_ERROR(file_.Open(model_path));
  STATICLM_RETURN_IF_ERROR(ReadModelConfig(file_, &config_));
  STATICLM_RETURN_IF_ERROR(UseModelWindow(config_, &limits_));
  STATICLM_RETURN_IF_ERROR(
      InitTokenizerFromGguf(file_, static_cast<size_t>(limits.max_prompt_bytes), &tokenizer_));
  if (tokenizer_.vocab_size() != config_.vocab_size) {
    return Status::Error(StatusCode::kFormatError,
                         "tokenizer has %d tokens but token_embd.weight has %d rows",
                         tokenizer_.vocab_size(), config_.vocab_size);
  }
  // A base model (Gemma 3 270M) has no template, and a template may be of no known family:
  // either way plain prompts run, and chat says why not (engine_chat.cpp).
  STATICLM_RETURN_IF_ERROR(InitChatTemplateFromGguf(file_, ChatBosText(), &chat_template_));
  if (limits.plan_path != nullptr) {
    STATICLM_RETURN_IF_ERROR(LoadPlans(limits.plan_path));
  } else {
    STATICLM_RETURN_IF_ERROR(BuildPlans());
  }
  ComputeMemoryReport();
  return Status::Ok();
}

Status Engine::BuildPlans() {
  PlanLimits plan_limits;
  plan_limits.max_context = limits_.max_context;
  plan_limits.max_batch = limits_.max_batch;
  plan_limits.kv_dtype = limits_.kv_dtype;
  plan_limits.window = limits_.window;
  plan_limits.sinks = limits_.sinks;
  plan_limits.global_every = limits_.global_every;
  plan_limits.cache_chunk = limits_.prefill_chunk;  // both plans share the prefill's rings
  // With several sequences the decode plan takes one row per sequence (a batched step), and a
  // prefill plan of one sequence's tokens is always built beside it.
  const bool batched = limits_.max_batch > 1;
  n_plans_ = limits_.prefill_chunk > 1 || batched ? 2 : 1;
  for (int i = 0; i < n_plans_; ++i) {
    plan_limits.rows_are_sequences = i == kDecodePlan && batched;
    plan_limits.prefill_chunk = i == kPrefillPlan ? limits_.prefill_chunk : limits_.max_batch;
    STATICLM_RETURN_IF_ERROR(BuildDecoderPlan(file_, config_, plan_limits,
                                              kAllFusions & ~limits_.disabled_fusions, &plans_[i],
                                              &arenas_[i]));
  }
  return Status::Ok();
}

Status Engine::LoadPlans(const char* path) {
  auto contents = std::make_unique<PlanFileContents>();
  STATICLM_RETURN_IF_ERROR(LoadPlanFile(path, contents.get()));
  uint64_t fingerprint = FingerprintBytes(file_.file_data(), file_.file_bytes());
  session_.model_fingerprint = fingerprint;
  session_.have_fingerprint = true;
  if (contents->model_fingerprint != fingerprint) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "plan file %s was made for another model (fingerprint %016llx, this "
                         "model %016llx)",
                         path, static_cast<unsigned long long>(contents->model_fingerprint),
                         static_cast<unsigned long long>(fingerprint));
  }
  // A plan made for "auto" serves any backend, as does a run asking for "auto".
  if (std::strcmp(contents->backend, limits_.backend) != 0 &&
      std::strcmp(contents->backend, "auto") != 0 && std::strcmp(limits_.backend, "auto") != 0) {
    return Status::Error(StatusCode::kUnsupported,
                         "plan file %s is for backend '%s'; this run uses '%s'", path,
                         contents->backend, limits_.backend);
  }
  n_plans_ = contents->n_plans;
  for (int i = 0; i < n_plans_; ++i) {
    plans_[i] = std::move(contents->plans[i]);
    arenas_[i] = contents->arenas[i];
  }
  std::memcpy(plan_kernels_, contents->kernels, sizeof(plan_kernels_));
  const PlanLimits& l = plans_[n_plans_ - 1].limits;
  limits_.max_context = l.max_context;
  limits_.max_batch = l.max_batch;
  limits_.prefill_chunk = l.prefill_chunk;
  limits_.kv_dtype = l.kv_dtype;
  limits_.window = l.window;
  limits_.sinks = l.sinks;
  limits_.global_every = l.global_every;
  Status s = CheckLoadedPlans();
  if (!s.ok()) return Status::Error(s.code(), "plan file %s: %s", path, s.message());
  return Status::Ok();
}

// What a plan file cannot be trusted to get right about this model; bounds against the buffers
// are checked again by the backend at Prepare.
Status Engine::CheckLoadedPlans() const {
  const Plan& decode = plans_[kDecodePlan];
  const Plan& prefill = plans_[n_plans_ - 1];
  const bool batched = decode.limits.max_batch > 1;
  if (decode.limits.prefill_chunk != decode.limits.max_batch ||
      decode.limits.rows_are_sequences != batched || (batched && n_plans_ != 2) ||
      (n_plans_ == 2 && prefill.limits.rows_are_sequences) ||
      (n_plans_ == 2 && (decode.limits.max_context != prefill.limits.max_context ||
                         decode.limits.max_batch != prefill.limits.max_batch ||
                         decode.limits.kv_dtype != prefill.limits.kv_dtype ||
                         decode.limits.window != prefill.limits.window ||
                         decode.limits.sinks != prefill.limits.sinks ||
                         decode.limits.global_every != prefill.limits.global_every ||
                         decode.limits.cache_chunk != prefill.limits.cache_chunk))) {
    return Status::Error(StatusCode::kFormatError, "decode and prefill plans disagree");
  }
  if (prefill.limits.max_context <= 0 || prefill.limits.prefill_chunk <= 0 ||
      prefill.limits.prefill_chunk > prefill.limits.max_context ||
      (prefill.limits.kv_dtype != DType::kF16 && prefill.limits.kv_dtype != DType::kF32 &&
       prefill.limits.kv_dtype != kDTypeI8 && prefill.limits.kv_dtype != kDTypeKvQ4)) {
    return Status::Error(StatusCode::kFormatError, "its limits are out of range");
  }
  if (prefill.limits.max_context > config_.context_length) {
    return Status::Error(StatusCode::kInvalidArgument, "its context %d exceeds the model's %d",
                         prefill.limits.max_context, config_.context_length);
  }
  for (int i = 0; i < n_plans_; ++i) {
    const Plan& plan = plans_[i];
    for (BufferId b : {BufferId::kKvCache, BufferId::kArena, BufferId::kIo}) {
      uint64_t bound = DecoderBufferBound(config_, plan.limits, b);
      if (plan.buffer_bytes[static_cast<int>(b)] > bound) {
        return Status::Error(
            StatusCode::kFormatError, "its %s needs %llu bytes, more than such a plan can (%llu)",
            BufferName(b), static_cast<unsigned long long>(plan.buffer_bytes[static_cast<int>(b)]),
            static_cast<unsigned long long>(bound));
      }
    }
    for (const TensorRegion& t : plan.tensors) {
      if (!TensorShapeInRange(t)) {
        return Status::Error(StatusCode::kFormatError, "a tensor's shape is out of range");
      }
    }
    const int64_t logit_rows = plan.limits.rows_are_sequences ? plan.limits.max_batch : 1;
    if (plan.tensors[plan.logits_tensor].elements() != logit_rows * config_.vocab_size ||
        plan.tensors[plan.logits_tensor].buffer != BufferId::kIo ||
        plan.tensors[plan.tokens_tensor].buffer != BufferId::kIo ||
        plan.tensors[plan.tokens_tensor].dtype != DType::kI32 ||
        plan.tensors[plan.tokens_tensor].elements() < plan.limits.prefill_chunk ||
        plan.tensors[plan.logits_tensor].offset !=
            plans_[0].tensors[plans_[0].logits_tensor].offset) {
      return Status::Error(StatusCode::kFormatError, "its io tensors do not fit this model");
    }
    for (const Op& op : plan.ops) {
      if (op.kind == OpKind::kEmbed && plan.tensors[op.inputs[0]].shape[0] < config_.vocab_size) {
        return Status::Error(StatusCode::kFormatError, "its embedding table is too small");
      }
    }
  }
  return Status::Ok();
}

Status Engine::SavePlans(const char* path) const {
  auto contents = std::make_unique<PlanFileContents>();
  contents->model_fingerprint = FingerprintBytes(file_.file_data(), file_.file_bytes());
  std::snprintf(contents->backend, sizeof(contents->backend), "%s", limits_.backend);
  std::snprintf(contents->kernels, sizeof(contents->kernels), "%s",
                BackendKernelChoice(limits_.backend, MakeBackendOptions()));
  contents->n_plans = n_plans_;
  for (int i = 0; i < n_plans_; ++i) {
    contents->plans[i] = plans_[i];
    contents->arenas[i] = arenas_[i];
  }
  return SavePlanFile(path, *contents);
}

// The path is borrowed for the call; the engine keeps its own copy (default: beside the plan).
Status Engine::CopyPipelineCachePath(const EngineLimits& limits) {
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

BackendOptions Engine::MakeBackendOptions() const {
  BackendOptions options;
  options.threads = limits_.threads;
  options.busy_wait = limits_.busy_wait;
  options.pin_threads = limits_.pin_threads;
  options.reference_kernels = limits_.reference_kernels;
  options.quantized_activations = limits_.activation_bits;
  options.device = limits_.device;
  options.logits_on_request = true;  // fetched when asked for (FetchHostLogits)
  std::memcpy(options.kernels, plan_kernels_, sizeof(options.kernels));
  std::memcpy(options.pipeline_cache_path, pipeline_cache_path_,
              sizeof(options.pipeline_cache_path));
  return options;
}

void Engine::ComputeMemoryReport() {
  memory_.weights_bytes = Bytes(plans_, n_plans_, BufferId::kWeights);
  memory_.kv_cache_bytes = Bytes(plans_, n_plans_, BufferId::kKvCache);
  memory_.arena_bytes = Bytes(plans_, n_plans_, BufferId::kArena);
  memory_.io_bytes = Bytes(plans_, n_plans_, BufferId::kIo);
  memory_.arena = arenas_[n_plans_ - 1];  // the prefill plan's, the larger
  // Each sequence's history, and under ring caches an in-order copy (history()); with several
  // sequences, each one's logits.
  const uint64_t batch = static_cast<uint64_t>(limits_.max_batch);
  const uint64_t history_copies = batch + (PlanPositionsUnbounded(plans_[0]) ? 1 : 0);
  const uint64_t logits = batch > 1 ? batch * config_.vocab_size * sizeof(float) : 0;
  memory_.host_bytes =
      history_copies * static_cast<uint64_t>(limits_.max_context) * sizeof(int32_t) + logits +
      batch * sizeof(Sequence) + tokenizer_.ScratchBytes() +
      Sampler::ScratchBytes(config_.vocab_size);
  memory_.snapshot_bytes = SessionStore::Bytes(limits_.max_snapshots, SequenceKvBytes(),
                                               limits_.max_context, config_.vocab_size);
  memory_.total_bytes = memory_.weights_bytes + memory_.kv_cache_bytes + memory_.arena_bytes +
                        memory_.io_bytes + memory_.host_bytes + memory_.snapshot_bytes;
  SplitKvBytes(plans_[n_plans_ - 1]);
}

// The KV cache by layer kind, from the cache tensors each layer's store writes, and the
// all-global equivalent from the builder's exact bound of a plan without a window.
void Engine::SplitKvBytes(const Plan& plan) {
  memory_.kv_ring_bytes = memory_.kv_global_bytes = 0;
  for (const Op& op : plan.ops) {
    if (op.kind != OpKind::kKvStore) continue;
    uint64_t& kind = op.params.cache_policy == CachePolicy::kStatic ? memory_.kv_global_bytes
                                                                    : memory_.kv_ring_bytes;
    for (int i = 0; i < op.n_outputs; ++i) {
      kind += (plan.tensors[op.outputs[i]].bytes() + kPlanAlignment - 1) / kPlanAlignment *
              kPlanAlignment;
    }
  }
  PlanLimits all_global = plan.limits;
  all_global.window = all_global.sinks = all_global.global_every = 0;
  memory_.kv_all_global_bytes = DecoderBufferBound(config_, all_global, BufferId::kKvCache);
}

Status Engine::Allocate() {
  STATICLM_RETURN_IF_ERROR(kv_cache_.Allocate(memory_.kv_cache_bytes, 64, "the KV cache"));
  STATICLM_RETURN_IF_ERROR(arena_.Allocate(memory_.arena_bytes, 64, "the arena"));
  STATICLM_RETURN_IF_ERROR(io_.Allocate(memory_.io_bytes, 64, "the io buffer"));
  const size_t batch = static_cast<size_t>(limits_.max_batch);
  const size_t context = static_cast<size_t>(limits_.max_context);
  sequences_ = std::make_unique<Sequence[]>(batch);
  history_ = std::make_unique<int32_t[]>(batch * context);
  if (batch > 1) {
    sequence_logits_ = std::make_unique<float[]>(batch * static_cast<size_t>(config_.vocab_size));
  }
  if (PlanPositionsUnbounded(plans_[0])) {
    history_in_order_ = std::make_unique<int32_t[]>(static_cast<size_t>(limits_.max_context));
  }
  STATICLM_RETURN_IF_ERROR(sampler_.Init(config_.vocab_size));
  STATICLM_RETURN_IF_ERROR(InitSessionStore());

  BufferBinding binding;
  binding.data[int(BufferId::kWeights)] = const_cast<uint8_t*>(file_.tensor_data());
  binding.bytes[int(BufferId::kWeights)] = file_.tensor_data_bytes();
  binding.data[int(BufferId::kKvCache)] = kv_cache_.data();
  binding.bytes[int(BufferId::kKvCache)] = kv_cache_.size();
  binding.data[int(BufferId::kArena)] = arena_.data();
  binding.bytes[int(BufferId::kArena)] = arena_.size();
  binding.data[int(BufferId::kIo)] = io_.data();
  binding.bytes[int(BufferId::kIo)] = io_.size();
  STATICLM_RETURN_IF_ERROR(PrepareBackend(binding));
  if (limits_.lock_memory) LockMemory(binding);

  // Warm-up: one step touches every weight page and every code path once, so the first real
  // token does not pay for page faults. Its cache slot is overwritten before it is ever read.
  // Both plans are warmed up (a one-token decode step, then a two-token prefill step).
  const int32_t warm_tokens[2] = {0, 0};
  STATICLM_RETURN_IF_ERROR(RunChunk(0, warm_tokens, 1));
  if (n_plans_ > 1 && limits_.max_context >= 3) {
    STATICLM_RETURN_IF_ERROR(RunChunk(0, warm_tokens, 2));
  }
  Reset();
  return Status::Ok();
}

void Engine::AddInitNote(const char* note) {
  size_t used = std::strlen(init_notes_);
  std::snprintf(init_notes_ + used, sizeof(init_notes_) - used, "%s%s", used > 0 ? "; " : "", note);
}

// --lock: every buffer resident and locked before the first step, so a benchmark sees no page
// faults. A refusal is a note, not an error: the run is still correct, only less steady.
void Engine::LockMemory(const BufferBinding& binding) {
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

// "auto" tries Vulkan and falls back to the CPU, saying why in the init notes.
Status Engine::PrepareBackend(const BufferBinding& binding) {
  const Plan* plans[2] = {&plans_[0], &plans_[1]};
  const bool automatic = std::strcmp(limits_.backend, "auto") == 0;
  const char* first = automatic ? "vulkan" : limits_.backend;
  Status s = CreateBackend(first, MakeBackendOptions(), &backend_);
  if (s.ok()) s = backend_->Prepare(plans, n_plans_, binding);
  if (s.ok() && backend_->prepare_note()[0] != '\0') AddInitNote(backend_->prepare_note());
  if (s.ok() || !automatic) return s;
  char note[320];
  std::snprintf(note, sizeof(note), "vulkan unavailable (%s); using cpu", s.message());
  AddInitNote(note);
  backend_.reset();
  STATICLM_RETURN_IF_ERROR(CreateBackend("cpu", MakeBackendOptions(), &backend_));
  return backend_->Prepare(plans, n_plans_, binding);
}

}  // namespace staticlm
