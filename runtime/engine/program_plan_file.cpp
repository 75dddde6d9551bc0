// Program: plan files — loading plans built earlier for this model instead of building them,
// checking what a file cannot be trusted with, and saving them. Init only.
#include <cstdio>
#include <cstring>
#include <memory>

#include "backends/backend_registry.h"
#include "contract/plan_validation.h"
#include "runtime/engine/program.h"
#include "runtime/plan/decoder_plan_builder.h"
#include "runtime/plan/plan_file.h"

namespace staticlm {

Status Program::LoadPlans(const char* path) {
  auto contents = std::make_unique<PlanFileContents>();
  STATICLM_RETURN_IF_ERROR(LoadPlanFile(path, contents.get()));
  const uint64_t fingerprint = model_->Fingerprint();
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
  limits_.global_window = l.global_window;
  Status s = CheckLoadedPlans();
  if (!s.ok()) return Status::Error(s.code(), "plan file %s: %s", path, s.message());
  return Status::Ok();
}

// What a plan file cannot be trusted to get right about this model; bounds against the buffers
// are checked again by the backend at Prepare.
Status Program::CheckLoadedPlans() const {
  const ModelConfig& config = model_->config();
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
                         decode.limits.global_window != prefill.limits.global_window ||
                         decode.limits.cache_chunk != prefill.limits.cache_chunk))) {
    return Status::Error(StatusCode::kFormatError, "decode and prefill plans disagree");
  }
  if (prefill.limits.max_context <= 0 || prefill.limits.prefill_chunk <= 0 ||
      prefill.limits.prefill_chunk > prefill.limits.max_context ||
      (prefill.limits.kv_dtype != DType::kF16 && prefill.limits.kv_dtype != DType::kF32 &&
       prefill.limits.kv_dtype != kDTypeI8 && prefill.limits.kv_dtype != kDTypeKvQ4)) {
    return Status::Error(StatusCode::kFormatError, "its limits are out of range");
  }
  if (prefill.limits.max_context > config.context_length) {
    return Status::Error(StatusCode::kInvalidArgument, "its context %d exceeds the model's %d",
                         prefill.limits.max_context, config.context_length);
  }
  for (int i = 0; i < n_plans_; ++i) {
    const Plan& plan = plans_[i];
    for (BufferId b : {BufferId::kKvCache, BufferId::kArena, BufferId::kIo}) {
      uint64_t bound = DecoderBufferBound(config, plan.limits, b);
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
    if (plan.tensors[plan.logits_tensor].elements() != logit_rows * config.vocab_size ||
        plan.tensors[plan.logits_tensor].buffer != BufferId::kIo ||
        plan.tensors[plan.tokens_tensor].buffer != BufferId::kIo ||
        plan.tensors[plan.tokens_tensor].dtype != DType::kI32 ||
        plan.tensors[plan.tokens_tensor].elements() < plan.limits.prefill_chunk ||
        plan.tensors[plan.logits_tensor].offset !=
            plans_[0].tensors[plans_[0].logits_tensor].offset) {
      return Status::Error(StatusCode::kFormatError, "its io tensors do not fit this model");
    }
    for (const Op& op : plan.ops) {
      if (op.kind == OpKind::kEmbed && plan.tensors[op.inputs[0]].shape[0] < config.vocab_size) {
        return Status::Error(StatusCode::kFormatError, "its embedding table is too small");
      }
    }
  }
  return Status::Ok();
}

Status Program::SavePlans(const char* path) const {
  auto contents = std::make_unique<PlanFileContents>();
  contents->model_fingerprint = model_->Fingerprint();
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

}  // namespace staticlm
