#include "backends/cpu/cpu_backend.h"

#include <cstring>

#include "backends/cpu/reference_kernels.h"
#include "backends/plan_validation.h"

namespace staticlm::cpu {

Status CpuBackend::Prepare(const Plan& plan, const BufferBinding& buffers) {
  STATICLM_RETURN_IF_ERROR(ValidatePlan(plan, buffers));
  plan_ = &plan;
  addresses_.assign(plan.tensors.size(), nullptr);
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const TensorRegion& t = plan.tensors[i];
    addresses_[i] = buffers.data[static_cast<int>(t.buffer)] + t.offset;
  }
  return Status::Ok();
}

Status CpuBackend::Execute(const StepParams& step) {
  if (plan_ == nullptr) return Status::Error(StatusCode::kInvalidState, "backend not prepared");
  const PlanLimits& limits = plan_->limits;
  if (step.n_tokens <= 0 || step.n_tokens > limits.prefill_chunk) {
    return Status::Error(StatusCode::kInvalidArgument, "step token count outside 1..chunk");
  }
  if (step.position < 0 || step.position > limits.max_context - step.n_tokens) {
    return Status::Error(StatusCode::kContextFull, "step would write past the context");
  }
  for (const Op& op : plan_->ops) RunOp(op, step);
  return Status::Ok();
}

void CpuBackend::RunOp(const Op& op, const StepParams& step) {
  const OpParams& p = op.params;
  const TensorRegion& out = plan_->tensors[op.outputs[0]];
  int64_t rows = p.rows_from_step ? step.n_tokens : out.shape[0];
  int64_t width = out.shape[1];
  float* y = reinterpret_cast<float*>(Address(op.outputs[0]));
  auto input_f32 = [&](int i) { return reinterpret_cast<const float*>(Address(op.inputs[i])); };

  switch (op.kind) {
    case OpKind::kEmbed: {
      const TensorRegion& table = plan_->tensors[op.inputs[0]];
      ref::Embed(table.dtype, Address(op.inputs[0]), width,
                 reinterpret_cast<const int32_t*>(Address(op.inputs[1])), rows, y);
      return;
    }
    case OpKind::kRmsNorm:
      ref::RmsNorm(input_f32(0), input_f32(1), rows, width, p.eps, y);
      return;
    case OpKind::kMatMul: {
      const TensorRegion& w = plan_->tensors[op.inputs[1]];
      ref::MatMul(w.dtype, Address(op.inputs[1]), w.shape[0], w.shape[1], input_f32(0), rows, y);
      return;
    }
    case OpKind::kRope:
      ref::Rope(y, rows, width / p.head_dim, p.head_dim, step.position, p.rope_base);
      return;
    case OpKind::kKvStore: {
      const TensorRegion& cache = plan_->tensors[op.outputs[0]];
      ref::KvStore(input_f32(0), input_f32(1), rows, p.n_kv_heads, p.head_dim, cache.shape[1],
                   step.position, cache.dtype, Address(op.outputs[0]), Address(op.outputs[1]));
      return;
    }
    case OpKind::kAttention: {
      const TensorRegion& cache = plan_->tensors[op.inputs[1]];
      ref::Attention(input_f32(0), rows, p.n_heads, p.n_kv_heads, p.head_dim, cache.shape[1],
                     step.position, p.scale, cache.dtype, Address(op.inputs[1]),
                     Address(op.inputs[2]), reinterpret_cast<float*>(Address(op.inputs[3])), y);
      return;
    }
    case OpKind::kAdd:
      ref::Add(y, input_f32(0), rows * width);
      return;
    case OpKind::kSiluMul:
      ref::SiluMul(y, input_f32(0), rows * width);
      return;
    case OpKind::kTakeLast: {
      const TensorRegion& x = plan_->tensors[op.inputs[0]];
      std::memcpy(y, input_f32(0) + (step.n_tokens - 1) * x.shape[1],
                  static_cast<size_t>(x.shape[1]) * sizeof(float));
      return;
    }
  }
}

}  // namespace staticlm::cpu
