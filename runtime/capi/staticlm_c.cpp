// The C API: a thin layer that converts between C types and the Engine. Every run-phase call
// records its Status in the context so staticlm_last_error() can return its message.
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>

#include "backends/backend_registry.h"
#include "runtime/capi/capi_context.h"
#include "runtime/engine/engine.h"
#include "runtime/plan/fusion_passes.h"
#include "runtime/plan/plan_cost.h"
#include "runtime/plan/plan_report.h"
#include "staticlm/staticlm.h"

namespace {

using staticlm::Status;
using staticlm::StatusCode;
using staticlm::capi::NullArgument;
using staticlm::capi::Record;
using staticlm::capi::ToC;

// Init calls allocate. A refused allocation (std::bad_alloc from a container or new) comes back
// as a status and never crosses the C boundary; what was built before it is released by its
// owner's destructor (init_fault_test fails every allocation of init in turn).
template <typename Init>
Status CatchingBadAlloc(Init&& init) {
  try {
    return init();
  } catch (const std::bad_alloc&) {
    return Status::Error(StatusCode::kOutOfMemory, "out of memory at init");
  }
}

void WriteError(const Status& s, char* error, size_t capacity) {
  if (error != nullptr && capacity > 0) std::snprintf(error, capacity, "%s", s.message());
}

Status ToEngineLimits(const staticlm_limits* in, staticlm::EngineLimits* out) {
  if (in == nullptr) return Status::Error(StatusCode::kInvalidArgument, "limits are NULL");
  if (in->kv_type != STATICLM_KV_F16 && in->kv_type != STATICLM_KV_F32 &&
      in->kv_type != STATICLM_KV_Q8 && in->kv_type != STATICLM_KV_Q4) {
    return Status::Error(StatusCode::kInvalidArgument, "unknown KV type %d", int(in->kv_type));
  }
  const char* backend = in->backend != nullptr ? in->backend : "cpu";
  if (std::strlen(backend) >= sizeof(out->backend)) {
    return Status::Error(StatusCode::kInvalidArgument, "unknown backend '%.32s'", backend);
  }
  out->max_context = in->max_context;
  out->max_batch = in->max_batch;
  out->prefill_chunk = in->prefill_chunk;
  out->max_prompt_bytes = in->max_prompt_bytes;
  out->kv_dtype = in->kv_type == STATICLM_KV_F32  ? staticlm::DType::kF32
                  : in->kv_type == STATICLM_KV_Q8 ? staticlm::kDTypeI8
                  : in->kv_type == STATICLM_KV_Q4 ? staticlm::kDTypeKvQ4
                                                  : staticlm::DType::kF16;
  out->threads = in->threads;
  out->reference_kernels = in->reference_kernels != 0;
  out->busy_wait = in->busy_wait != 0;
  out->pin_threads = in->pin_threads != 0;
  out->profile_ops = in->profile_ops != 0;
  out->huge_pages = in->huge_pages != 0;
  out->lock_memory = in->lock_memory != 0;
  out->plan_path = in->plan_path;
  out->disabled_fusions = in->disabled_fusions;
  std::snprintf(out->backend, sizeof(out->backend), "%s", backend);
  out->device = in->device;
  out->window = in->window;
  out->sinks = in->sinks;
  out->global_every = in->global_every;
  out->max_snapshots = in->max_snapshots;
  out->pipeline_cache_path = in->pipeline_cache_path;
  out->activation_bits = in->activation_bits;
  out->quantize = in->quantize;
  const char* isa = in->isa != nullptr ? in->isa : "auto";
  if (std::strlen(isa) >= sizeof(out->isa)) {
    return Status::Error(StatusCode::kInvalidArgument, "--isa %.32s: unknown", isa);
  }
  std::snprintf(out->isa, sizeof(out->isa), "%s", isa);
  return Status::Ok();
}

void ToCMemory(const staticlm::MemoryReport& m, staticlm_memory* out) {
  out->weights_bytes = m.weights_bytes;
  out->kv_cache_bytes = m.kv_cache_bytes;
  out->arena_bytes = m.arena_bytes;
  out->io_bytes = m.io_bytes;
  out->host_bytes = m.host_bytes;
  out->total_bytes = m.total_bytes;
  out->arena_lower_bound_bytes = m.arena.lower_bound_bytes;
  out->arena_naive_bytes = m.arena.naive_bytes;
  out->snapshot_bytes = m.snapshot_bytes;
  out->kv_ring_bytes = m.kv_ring_bytes;
  out->kv_global_bytes = m.kv_global_bytes;
  out->kv_all_global_bytes = m.kv_all_global_bytes;
  out->packed_weights_bytes = m.packed_weights_bytes;
}

// Loads (or builds) the plans of a model without allocating its buffers: enough for reports
// and for saving plan files.
Status LoadEngine(const char* model_path, const staticlm_limits* limits,
                  std::unique_ptr<staticlm::Engine>* engine) {
  if (model_path == nullptr)
    return Status::Error(StatusCode::kInvalidArgument, "model path is NULL");
  staticlm::EngineLimits engine_limits;
  STATICLM_RETURN_IF_ERROR(ToEngineLimits(limits, &engine_limits));
  engine->reset(new (std::nothrow) staticlm::Engine());
  if (*engine == nullptr) return Status::Error(StatusCode::kOutOfMemory, "out of memory");
  return CatchingBadAlloc([&] { return (*engine)->Load(model_path, engine_limits); });
}

}  // namespace

extern "C" {

const char* staticlm_version(void) {
  return "0.1.0";
}

void staticlm_limits_default(staticlm_limits* limits) {
  if (limits == nullptr) return;
  staticlm::EngineLimits d;
  limits->max_context = d.max_context;
  limits->max_batch = d.max_batch;
  limits->prefill_chunk = d.prefill_chunk;
  limits->max_prompt_bytes = d.max_prompt_bytes;
  limits->kv_type = STATICLM_KV_F16;
  limits->threads = d.threads;
  limits->reference_kernels = 0;
  limits->busy_wait = 0;
  limits->pin_threads = 0;
  limits->lock_memory = 0;
  limits->plan_path = nullptr;
  limits->disabled_fusions = 0;
  limits->backend = nullptr;
  limits->device = 0;
  limits->window = 0;
  limits->sinks = 0;
  limits->global_every = 0;
  limits->max_snapshots = 0;
  limits->pipeline_cache_path = nullptr;
  limits->activation_bits = 0;
  limits->quantize = nullptr;
  limits->isa = nullptr;
  limits->huge_pages = 1;
  limits->profile_ops = 0;
}

uint32_t staticlm_fusion_pass(const char* name) {
  return name == nullptr ? 0 : staticlm::FusionPassByName(name);
}

staticlm_status staticlm_plan_memory(const char* model_path, const staticlm_limits* limits,
                                     staticlm_memory* memory, char* error, size_t error_capacity) {
  staticlm::EngineLimits engine_limits;
  Status s = ToEngineLimits(limits, &engine_limits);
  if (s.ok() && (model_path == nullptr || memory == nullptr)) {
    s = Status::Error(StatusCode::kInvalidArgument, "model path or memory is NULL");
  }
  staticlm::Engine* engine = nullptr;
  if (s.ok()) {
    engine = new (std::nothrow) staticlm::Engine();
    if (engine == nullptr) s = Status::Error(StatusCode::kOutOfMemory, "out of memory");
  }
  if (s.ok()) s = CatchingBadAlloc([&] { return engine->Load(model_path, engine_limits); });
  if (s.ok()) ToCMemory(engine->memory(), memory);
  delete engine;
  WriteError(s, error, error_capacity);
  return ToC(s.code());
}

staticlm_status staticlm_cpu_isa(const staticlm_limits* limits, char* out, size_t capacity,
                                 char* error, size_t error_capacity) {
  staticlm::EngineLimits engine_limits;
  Status s = ToEngineLimits(limits, &engine_limits);
  if (s.ok() && out == nullptr && capacity > 0) {
    s = Status::Error(StatusCode::kInvalidArgument, "out is NULL");
  }
  staticlm::BackendOptions options;
  options.reference_kernels = engine_limits.reference_kernels;
  std::memcpy(options.isa, engine_limits.isa, sizeof(options.isa));
  if (s.ok()) s = staticlm::DescribeCpuIsaChoice(options, out, capacity);
  WriteError(s, error, error_capacity);
  return ToC(s.code());
}

staticlm_status staticlm_save_plan(const char* model_path, const staticlm_limits* limits,
                                   const char* plan_path, char* error, size_t error_capacity) {
  std::unique_ptr<staticlm::Engine> engine;
  Status s = LoadEngine(model_path, limits, &engine);
  if (s.ok() && plan_path == nullptr)
    s = Status::Error(StatusCode::kInvalidArgument, "plan path is NULL");
  if (s.ok()) s = engine->SavePlans(plan_path);
  WriteError(s, error, error_capacity);
  return ToC(s.code());
}

staticlm_status staticlm_plan_report(const char* model_path, const staticlm_limits* limits,
                                     int json, char* out, size_t capacity, size_t* needed,
                                     char* error, size_t error_capacity) {
  std::unique_ptr<staticlm::Engine> engine;
  Status s = needed != nullptr && (out != nullptr || capacity == 0)
                 ? LoadEngine(model_path, limits, &engine)
                 : Status::Error(StatusCode::kInvalidArgument, "needed or out is NULL");
  if (!s.ok()) {
    WriteError(s, error, error_capacity);
    return ToC(s.code());
  }
  int32_t chunk = engine->plan_for(2).limits.prefill_chunk;
  staticlm::ReportedPlan plans[2] = {
      {"decode", &engine->plan_for(1), engine->arena_for(1), 1},
      {"prefill", &engine->plan_for(chunk), engine->arena_for(chunk), chunk}};
  *needed = json ? staticlm::WritePlanJson(plans, 2, out, capacity)
                 : staticlm::WritePlanTable(plans, 2, out, capacity);
  return STATICLM_OK;
}

staticlm_status staticlm_create(const char* model_path, const staticlm_limits* limits,
                                staticlm_context** context, char* error, size_t error_capacity) {
  if (context == nullptr) {
    WriteError(Status::Error(StatusCode::kInvalidArgument, "context is NULL"), error,
               error_capacity);
    return STATICLM_INVALID_ARGUMENT;
  }
  *context = nullptr;
  staticlm::EngineLimits engine_limits;
  Status s = ToEngineLimits(limits, &engine_limits);
  if (s.ok() && model_path == nullptr) {
    s = Status::Error(StatusCode::kInvalidArgument, "model path is NULL");
  }
  staticlm_context* c = nullptr;
  if (s.ok()) {
    c = new (std::nothrow) staticlm_context();
    if (c == nullptr) s = Status::Error(StatusCode::kOutOfMemory, "out of memory");
  }
  if (s.ok()) s = CatchingBadAlloc([&] { return c->engine.Load(model_path, engine_limits); });
  if (s.ok()) s = CatchingBadAlloc([&] { return c->engine.Allocate(); });
  if (!s.ok()) {
    delete c;
    WriteError(s, error, error_capacity);
    return ToC(s.code());
  }
  *context = c;
  return STATICLM_OK;
}

void staticlm_destroy(staticlm_context* context) {
  delete context;
}

const char* staticlm_last_error(const staticlm_context* context) {
  return context == nullptr ? "context is NULL" : context->last.message();
}

void staticlm_get_memory(const staticlm_context* context, staticlm_memory* memory) {
  if (context == nullptr || memory == nullptr) return;
  ToCMemory(context->engine.memory(), memory);
}

void staticlm_get_model_info(const staticlm_context* context, staticlm_model_info* info) {
  if (context == nullptr || info == nullptr) return;
  const staticlm::ModelConfig& c = context->engine.config();
  info->n_layers = c.n_layers;
  info->width = c.width;
  info->n_heads = c.n_heads;
  info->n_kv_heads = c.n_kv_heads;
  info->head_dim = c.head_dim;
  info->ffn_width = c.ffn_width;
  info->vocab_size = c.vocab_size;
  info->context_length = c.context_length;
  info->rope_base = c.rope_base;
  info->rms_eps = c.rms_eps;
  info->add_bos = context->engine.tokenizer().add_bos() ? 1 : 0;
}

staticlm_status staticlm_tokenize(staticlm_context* context, const char* text, size_t text_bytes,
                                  int parse_special, int32_t* tokens, size_t capacity,
                                  size_t* n_tokens) {
  if (context == nullptr) return STATICLM_INVALID_ARGUMENT;
  if (n_tokens == nullptr) return NullArgument(context, "n_tokens");
  *n_tokens = 0;
  if (tokens == nullptr && capacity > 0) return NullArgument(context, "tokens");
  const Status& text_status = context->engine.model().text_status();
  if (!text_status.ok()) return Record(context, text_status);
  if (text == nullptr && text_bytes > 0) {
    return Record(context, Status::Error(StatusCode::kInvalidArgument, "text is NULL"));
  }
  return Record(context,
                context->engine.tokenizer().Encode(std::string_view(text, text_bytes),
                                                   parse_special != 0, tokens, capacity, n_tokens));
}

staticlm_status staticlm_token_piece(staticlm_context* context, int32_t token, char* out,
                                     size_t capacity, size_t* n_bytes) {
  if (context == nullptr) return STATICLM_INVALID_ARGUMENT;
  if (n_bytes == nullptr) return NullArgument(context, "n_bytes");
  *n_bytes = 0;
  if (out == nullptr && capacity > 0) return NullArgument(context, "out");
  if (token < 0 || token >= context->engine.tokenizer().vocab_size()) {
    return Record(context, Status::Error(StatusCode::kInvalidArgument, "token id out of range"));
  }
  const std::string_view piece = context->engine.tokenizer().TokenText(token);
  if (piece.size() > capacity) {
    return Record(context, Status::Error(StatusCode::kInvalidArgument,
                                         "token piece does not fit the buffer"));
  }
  if (!piece.empty()) std::memcpy(out, piece.data(), piece.size());
  *n_bytes = piece.size();
  return Record(context, Status::Ok());
}

staticlm_status staticlm_format_chat(staticlm_context* context,
                                     const staticlm_chat_message* messages, size_t n_messages,
                                     int add_generation_prompt, int continuation, char* out,
                                     size_t capacity, size_t* n_bytes) {
  static_assert(sizeof(staticlm_chat_message) == sizeof(staticlm::ChatMessage));
  if (context == nullptr) return STATICLM_INVALID_ARGUMENT;
  if (n_bytes == nullptr) return NullArgument(context, "n_bytes");
  *n_bytes = 0;
  if (out == nullptr && capacity > 0) return NullArgument(context, "out");
  if (messages == nullptr && n_messages > 0) return NullArgument(context, "messages");
  const Status& text_status = context->engine.model().text_status();
  if (!text_status.ok()) return Record(context, text_status);
  const auto* m = reinterpret_cast<const staticlm::ChatMessage*>(messages);
  const staticlm::ChatTemplate& t = context->engine.chat_template();
  Status s =
      continuation != 0
          ? t.FormatContinuation(m, n_messages, add_generation_prompt != 0, out, capacity, n_bytes)
          : t.FormatChat(m, n_messages, add_generation_prompt != 0, out, capacity, n_bytes);
  return Record(context, s);
}

staticlm_status staticlm_set_chat_format(staticlm_context* context, const char* name) {
  if (context == nullptr) return STATICLM_INVALID_ARGUMENT;
  return Record(context, CatchingBadAlloc([&] { return context->engine.SetChatFormat(name); }));
}

staticlm_status staticlm_chat_format(staticlm_context* context, staticlm_chat_format_info* info) {
  if (context == nullptr) return STATICLM_INVALID_ARGUMENT;
  if (info == nullptr) return NullArgument(context, "info");
  const staticlm::ChatTemplate& t = context->engine.chat_template();
  const staticlm::ChatFormat* f = t.format();
  if (f == nullptr) {
    size_t n = 0;  // no messages: fails at once with the reason there is no format
    return Record(context, t.FormatChat(nullptr, 0, false, nullptr, 0, &n));
  }
  info->name = f->name;
  info->end_of_turn = f->end_of_turn.data();  // a literal: NUL-terminated
  info->system_turn = f->system == staticlm::SystemMessageStyle::kOwnTurn ? 1 : 0;
  return Record(context, Status::Ok());
}

staticlm_status staticlm_prefill(staticlm_context* context, const int32_t* tokens,
                                 size_t n_tokens) {
  if (context == nullptr) return STATICLM_INVALID_ARGUMENT;
  if (tokens == nullptr) return NullArgument(context, "tokens");
  return Record(context, context->engine.Prefill(tokens, n_tokens));
}

staticlm_status staticlm_decode(staticlm_context* context, int32_t token) {
  if (context == nullptr) return STATICLM_INVALID_ARGUMENT;
  return Record(context, context->engine.Prefill(&token, 1));
}

const float* staticlm_logits(const staticlm_context* context) {
  return context == nullptr ? nullptr : context->engine.logits();
}

void staticlm_sampler_default(staticlm_sampler* sampler) {
  if (sampler == nullptr) return;
  staticlm::SamplerParams d;
  sampler->temperature = d.temperature;
  sampler->top_k = d.top_k;
  sampler->top_p = d.top_p;
  sampler->min_p = d.min_p;
  sampler->repetition_penalty = d.repetition_penalty;
  sampler->repetition_window = d.repetition_window;
}

void staticlm_seed(staticlm_context* context, uint64_t seed) {
  if (context != nullptr) context->engine.Seed(seed);
}

staticlm_status staticlm_sample(staticlm_context* context, const staticlm_sampler* sampler,
                                int32_t* token) {
  if (context == nullptr) return STATICLM_INVALID_ARGUMENT;
  if (sampler == nullptr) return NullArgument(context, "sampler");
  if (token == nullptr) return NullArgument(context, "token");
  return Record(context, context->engine.Sample(staticlm::capi::ToSamplerParams(*sampler), token));
}

int staticlm_is_end_of_generation(const staticlm_context* context, int32_t token) {
  if (context == nullptr) return 0;
  return context->engine.tokenizer().IsEndOfGeneration(token) ? 1 : 0;
}

staticlm_status staticlm_token_to_text(staticlm_context* context, int32_t token, char* out,
                                       size_t capacity, size_t* n_bytes) {
  if (context == nullptr) return STATICLM_INVALID_ARGUMENT;
  if (n_bytes == nullptr) return NullArgument(context, "n_bytes");
  *n_bytes = 0;
  if (out == nullptr && capacity > 0) return NullArgument(context, "out");
  staticlm::Engine& e = context->engine;
  if (!e.model().text_status().ok()) return Record(context, e.model().text_status());
  return Record(context, e.detokenizer()->Push(e.tokenizer(), token, out, capacity, n_bytes));
}

size_t staticlm_flush_text(staticlm_context* context, char* out, size_t capacity) {
  if (context == nullptr || (out == nullptr && capacity > 0)) return 0;
  return context->engine.detokenizer()->Flush(out, capacity);
}

void staticlm_reset(staticlm_context* context) {
  if (context != nullptr) context->engine.Reset();
}

int32_t staticlm_position(const staticlm_context* context) {
  return context == nullptr ? -1 : context->engine.position();
}

const int32_t* staticlm_history(const staticlm_context* context, size_t* n_tokens) {
  if (n_tokens == nullptr) return nullptr;
  if (context == nullptr) {
    *n_tokens = 0;
    return nullptr;
  }
  return context->engine.history(n_tokens);
}

staticlm_status staticlm_snapshot_save(staticlm_context* context, int32_t slot) {
  if (context == nullptr) return STATICLM_INVALID_ARGUMENT;
  return Record(context, context->engine.SaveSnapshot(slot));
}

staticlm_status staticlm_snapshot_restore(staticlm_context* context, int32_t slot) {
  if (context == nullptr) return STATICLM_INVALID_ARGUMENT;
  return Record(context, context->engine.RestoreSnapshot(slot));
}

staticlm_status staticlm_session_save(staticlm_context* context, const char* path) {
  if (context == nullptr) return STATICLM_INVALID_ARGUMENT;
  if (path == nullptr) return NullArgument(context, "path");
  return Record(context, context->engine.SaveSession(path));
}

staticlm_status staticlm_session_load(staticlm_context* context, const char* path) {
  if (context == nullptr) return STATICLM_INVALID_ARGUMENT;
  if (path == nullptr) return NullArgument(context, "path");
  return Record(context, context->engine.LoadSession(path));
}

void staticlm_step_cost_get(const staticlm_context* context, int32_t n_tokens, int32_t position,
                            staticlm_step_cost* cost) {
  if (context == nullptr || cost == nullptr) return;
  staticlm::StepCost c =
      staticlm::EstimateStepCost(context->engine.plan_for(n_tokens), n_tokens, position);
  cost->weight_bytes = c.weight_bytes;
  cost->kv_cache_bytes = c.kv_cache_bytes;
  cost->activation_bytes = c.activation_bytes;
  cost->bytes_read = c.bytes_read;
  cost->bytes_written = c.bytes_written;
  cost->total_bytes = c.total_bytes();
  cost->flops = c.flops;
}

const char* staticlm_backend_name(const staticlm_context* context) {
  if (context == nullptr) return "";
  return context->engine.backend()->name();
}

const char* staticlm_init_notes(const staticlm_context* context) {
  if (context == nullptr) return "";
  return context->engine.init_notes();
}

const char* staticlm_backend_description(const staticlm_context* context) {
  if (context == nullptr) return "";
  return context->engine.backend()->description();
}

double staticlm_sync_seconds(const staticlm_context* context) {
  if (context == nullptr) return 0.0;
  return context->engine.backend()->sync_seconds();
}

staticlm_status staticlm_op_profile(const staticlm_context* context, staticlm_op_time* rows,
                                    size_t capacity, size_t* n_rows) {
  if (n_rows != nullptr) *n_rows = 0;
  if (context == nullptr || n_rows == nullptr || (rows == nullptr && capacity > 0)) {
    return STATICLM_INVALID_ARGUMENT;
  }
  const staticlm::OpProfile* profile = context->engine.backend()->op_profile();
  if (profile == nullptr) return STATICLM_UNSUPPORTED;
  size_t n = 0;
  profile->ForEachRow([&](const staticlm::OpProfileRow& r) {
    if (n < capacity) rows[n] = {r.op, r.weight, r.calls, r.seconds, r.weight_bytes};
    ++n;
  });
  *n_rows = n;
  return STATICLM_OK;
}

void staticlm_reset_op_profile(staticlm_context* context) {
  if (context != nullptr) context->engine.backend()->ResetOpProfile();
}

void staticlm_reset_sync_seconds(staticlm_context* context) {
  if (context != nullptr) context->engine.backend()->ResetSyncSeconds();
}

}  // extern "C"
