#include "backends/plan_validation.h"

namespace staticlm {
namespace {

struct Arity {
  int inputs;
  int outputs;
};

Arity ExpectedArity(OpKind kind) {
  switch (kind) {
    case OpKind::kEmbed: return {2, 1};
    case OpKind::kRmsNorm: return {2, 1};
    case OpKind::kMatMul: return {2, 1};
    case OpKind::kRope: return {0, 1};
    case OpKind::kKvStore: return {2, 2};
    case OpKind::kAttention: return {4, 1};
    case OpKind::kAdd: return {1, 1};
    case OpKind::kSiluMul: return {1, 1};
    case OpKind::kTakeLast: return {1, 1};
  }
  return {-1, -1};
}

Status ValidateTensor(const Plan& plan, uint32_t index, const BufferBinding& buffers) {
  const TensorRegion& t = plan.tensors[index];
  int b = static_cast<int>(t.buffer);
  if (b < 0 || b >= kBufferCount) {
    return Status::Error(StatusCode::kFormatError, "plan tensor %u (%s) names buffer %d", index,
                         t.name, b);
  }
  for (int d = 0; d < 4; ++d) {
    if (t.shape[d] <= 0) {
      return Status::Error(StatusCode::kFormatError, "plan tensor %u (%s) has dim %d = %lld",
                           index, t.name, d, static_cast<long long>(t.shape[d]));
    }
  }
  uint64_t bytes = t.bytes();
  if (t.offset > buffers.bytes[b] || bytes > buffers.bytes[b] - t.offset) {
    return Status::Error(StatusCode::kFormatError,
                         "plan tensor %u (%s) [%llu, +%llu) lies outside %s (%llu bytes)", index,
                         t.name, static_cast<unsigned long long>(t.offset),
                         static_cast<unsigned long long>(bytes), BufferName(t.buffer),
                         static_cast<unsigned long long>(buffers.bytes[b]));
  }
  if (buffers.data[b] == nullptr) {
    return Status::Error(StatusCode::kInvalidArgument, "buffer %s is not bound",
                         BufferName(t.buffer));
  }
  return Status::Ok();
}

Status ValidateMatMul(const Plan& plan, const Op& op, size_t index) {
  const TensorRegion& x = plan.tensors[op.inputs[0]];
  const TensorRegion& w = plan.tensors[op.inputs[1]];
  const TensorRegion& y = plan.tensors[op.outputs[0]];
  if (x.shape[1] != w.shape[1] || y.shape[1] != w.shape[0] || x.shape[0] != y.shape[0]) {
    return Status::Error(StatusCode::kFormatError, "op %zu (matmul %s): shapes do not agree",
                         index, w.name);
  }
  return Status::Ok();
}

}  // namespace

Status ValidatePlan(const Plan& plan, const BufferBinding& buffers) {
  for (int b = 0; b < kBufferCount; ++b) {
    if (buffers.bytes[b] < plan.buffer_bytes[b]) {
      return Status::Error(StatusCode::kInvalidArgument,
                           "buffer %s has %llu bytes, the plan needs %llu",
                           BufferName(static_cast<BufferId>(b)),
                           static_cast<unsigned long long>(buffers.bytes[b]),
                           static_cast<unsigned long long>(plan.buffer_bytes[b]));
    }
  }
  for (uint32_t i = 0; i < plan.tensors.size(); ++i) {
    STATICLM_RETURN_IF_ERROR(ValidateTensor(plan, i, buffers));
  }
  for (size_t i = 0; i < plan.ops.size(); ++i) {
    const Op& op = plan.ops[i];
    Arity arity = ExpectedArity(op.kind);
    if (op.n_inputs != arity.inputs || op.n_outputs != arity.outputs) {
      return Status::Error(StatusCode::kFormatError, "op %zu (%s) has %d inputs and %d outputs",
                           i, OpKindName(op.kind), op.n_inputs, op.n_outputs);
    }
    for (int j = 0; j < op.n_inputs; ++j) {
      if (op.inputs[j] >= plan.tensors.size()) {
        return Status::Error(StatusCode::kFormatError, "op %zu input %d is out of range", i, j);
      }
    }
    for (int j = 0; j < op.n_outputs; ++j) {
      if (op.outputs[j] >= plan.tensors.size()) {
        return Status::Error(StatusCode::kFormatError, "op %zu output %d is out of range", i, j);
      }
    }
    if (op.kind == OpKind::kMatMul) STATICLM_RETURN_IF_ERROR(ValidateMatMul(plan, op, i));
  }
  if (plan.limits.prefill_chunk <= 0 || plan.limits.max_context <= 0) {
    return Status::Error(StatusCode::kFormatError, "plan limits are not positive");
  }
  return Status::Ok();
}

}  // namespace staticlm
