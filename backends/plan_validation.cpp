#include "backends/plan_validation.h"

namespace staticlm {
namespace {

struct Arity {
  int inputs;
  int outputs;
};

Arity ExpectedArity(const Op& op) {
  switch (op.kind) {
    case OpKind::kEmbed:
      return {2, 1};
    case OpKind::kRmsNorm:
      return {2, 1};
    case OpKind::kMatMul: {
      MatMulLayout l = GetMatMulLayout(op.params);
      return {l.inputs, l.outputs};
    }
    case OpKind::kRope:
      return {0, 1};
    case OpKind::kKvStore:
      return {2, 2};
    case OpKind::kAttention:
      return {4, 1};
    case OpKind::kAdd:
      return {1, 1};
    case OpKind::kSiluMul:
      return {1, 1};
    case OpKind::kTakeLast:
      return {1, 1};
  }
  return {-1, -1};
}

Status ValidateTensor(const Plan& plan, uint32_t index, const BufferBinding& buffers) {
  const TensorRegion& t = plan.tensors[index];
  int b = static_cast<int>(t.buffer);
  if (!IsKnownDType(static_cast<uint32_t>(t.dtype))) {
    return Status::Error(StatusCode::kFormatError, "plan tensor %u has an unknown type", index);
  }
  if (b < 0 || b >= kBufferCount) {
    return Status::Error(StatusCode::kFormatError, "plan tensor %u (%s) names buffer %d", index,
                         t.name, b);
  }
  int64_t elements = 1;
  for (int d = 0; d < 4; ++d) {
    // Dims up to 2^31 and a product up to 2^48 keep every byte count far from overflow.
    if (t.shape[d] > (int64_t(1) << 31) ||
        (t.shape[d] > 0 && elements > (int64_t(1) << 48) / t.shape[d])) {
      return Status::Error(StatusCode::kFormatError, "plan tensor %u has an oversized shape",
                           index);
    }
    if (t.shape[d] > 0) elements *= t.shape[d];
    if (t.shape[d] <= 0) {
      return Status::Error(StatusCode::kFormatError, "plan tensor %u (%s) has dim %d = %lld", index,
                           t.name, d, static_cast<long long>(t.shape[d]));
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

bool IsF32Matrix(const TensorRegion& t, int64_t rows, int64_t width) {
  return t.dtype == DType::kF32 && t.shape[0] >= rows && t.shape[1] == width && t.shape[2] == 1 &&
         t.shape[3] == 1;
}

bool IsWeightType(DType t) {
  return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16 || t == DType::kQ8_0 ||
         t == DType::kQ4_0 || t == DType::kQ4_1;
}

bool IsCache(const TensorRegion& t, const OpParams& p, int64_t capacity) {
  return (t.dtype == DType::kF16 || t.dtype == DType::kF32) && t.shape[0] == p.n_kv_heads &&
         t.shape[1] >= capacity && t.shape[2] == p.head_dim && t.shape[3] == 1;
}

bool HeadsValid(const OpParams& p) {
  return p.n_heads > 0 && p.n_kv_heads > 0 && p.head_dim > 0 && p.head_dim % 2 == 0 &&
         p.head_dim <= 256 && p.n_heads % p.n_kv_heads == 0;
}

bool MatMulFlagsValid(const OpParams& p) {
  return p.n_weights >= 1 && p.n_weights <= 3 && (!p.silu_mul || p.n_weights == 2) &&
         (!p.accumulate || p.n_weights == 1) && (!p.norm_input || p.eps > 0.0f);
}

// Each product reads x (rows, k) and writes y_i (rows, n_i); the fusions add a norm weight (k),
// the normalised x (rows, k), a gate/up pair of equal widths, or an accumulator like y0.
bool MatMulShapesValid(const Plan& plan, const Op& op, int64_t rows) {
  MatMulLayout l = GetMatMulLayout(op.params);
  const TensorRegion& x = plan.tensors[op.inputs[0]];
  int64_t k = plan.tensors[op.inputs[1]].shape[1];
  if (!IsF32Matrix(x, rows, k)) return false;
  for (int i = 0; i < l.n_weights; ++i) {
    const TensorRegion& w = plan.tensors[op.inputs[1 + i]];
    if (!IsWeightType(w.dtype) || w.shape[1] != k || w.shape[2] != 1 || w.shape[3] != 1 ||
        k % GetDTypeInfo(w.dtype).block_elements != 0 ||
        !IsF32Matrix(plan.tensors[op.outputs[i]], rows, w.shape[0])) {
      return false;
    }
  }
  if (op.params.silu_mul &&
      plan.tensors[op.inputs[1]].shape[0] != plan.tensors[op.inputs[2]].shape[0]) {
    return false;
  }
  if (l.norm_weight_input >= 0) {
    const TensorRegion& g = plan.tensors[op.inputs[l.norm_weight_input]];
    if (g.dtype != DType::kF32 || g.elements() != k ||
        !IsF32Matrix(plan.tensors[op.outputs[l.normed_output]], rows, k)) {
      return false;
    }
  }
  if (l.acc_output >= 0 && !IsF32Matrix(plan.tensors[op.outputs[l.acc_output]], rows,
                                        plan.tensors[op.inputs[1]].shape[0])) {
    return false;
  }
  return true;
}

// Every kernel reads and writes exactly the extents these checks establish, so a plan that
// passes cannot make a kernel touch memory outside its buffers — even a hostile plan file.
bool OpShapesValid(const Plan& plan, const Op& op) {
  const PlanLimits& l = plan.limits;
  const OpParams& p = op.params;
  auto in = [&](int i) -> const TensorRegion& { return plan.tensors[op.inputs[i]]; };
  const TensorRegion& out = plan.tensors[op.outputs[0]];
  int64_t rows = p.rows_from_step ? l.prefill_chunk : out.shape[0];
  switch (op.kind) {
    case OpKind::kEmbed:
      return IsWeightType(in(0).dtype) && in(0).shape[1] == out.shape[1] &&
             in(0).shape[1] % GetDTypeInfo(in(0).dtype).block_elements == 0 &&
             in(1).dtype == DType::kI32 && in(1).elements() >= rows &&
             IsF32Matrix(out, rows, out.shape[1]);
    case OpKind::kRmsNorm:
      return in(1).dtype == DType::kF32 && in(1).elements() == out.shape[1] &&
             IsF32Matrix(in(0), rows, out.shape[1]) && IsF32Matrix(out, rows, out.shape[1]);
    case OpKind::kMatMul:
      return MatMulShapesValid(plan, op, rows);
    case OpKind::kRope:
      return p.head_dim > 0 && p.head_dim % 2 == 0 && out.shape[1] % p.head_dim == 0 &&
             p.rope_base > 0.0f && IsF32Matrix(out, rows, out.shape[1]);
    case OpKind::kKvStore:
      return HeadsValid(p) && IsF32Matrix(in(0), rows, p.n_kv_heads * p.head_dim) &&
             IsF32Matrix(in(1), rows, p.n_kv_heads * p.head_dim) &&
             IsCache(out, p, l.max_context) &&
             IsCache(plan.tensors[op.outputs[1]], p, l.max_context) &&
             out.dtype == plan.tensors[op.outputs[1]].dtype;
    case OpKind::kAttention:
      return HeadsValid(p) && IsF32Matrix(in(0), rows, p.n_heads * p.head_dim) &&
             IsCache(in(1), p, l.max_context) && IsCache(in(2), p, l.max_context) &&
             in(1).dtype == in(2).dtype && in(1).shape[1] == in(2).shape[1] &&
             in(3).dtype == DType::kF32 && in(3).elements() >= p.n_heads * in(1).shape[1] &&
             IsF32Matrix(out, rows, p.n_heads * p.head_dim);
    case OpKind::kAdd:
    case OpKind::kSiluMul:
      return IsF32Matrix(in(0), rows, out.shape[1]) && IsF32Matrix(out, rows, out.shape[1]);
    case OpKind::kTakeLast:
      return IsF32Matrix(in(0), l.prefill_chunk, out.shape[1]) && IsF32Matrix(out, 1, out.shape[1]);
  }
  return false;
}

}  // namespace

Status ValidatePlan(const Plan& plan, const BufferBinding& buffers) {
  const PlanLimits& l = plan.limits;
  if (l.prefill_chunk <= 0 || l.max_context <= 0 || l.max_batch != 1 ||
      l.prefill_chunk > l.max_context) {
    return Status::Error(StatusCode::kFormatError, "plan limits are out of range");
  }
  for (int b = 0; b < kBufferCount; ++b) {
    if (buffers.bytes[b] < plan.buffer_bytes[b]) {
      return Status::Error(
          StatusCode::kInvalidArgument, "buffer %s has %llu bytes, the plan needs %llu",
          BufferName(static_cast<BufferId>(b)), static_cast<unsigned long long>(buffers.bytes[b]),
          static_cast<unsigned long long>(plan.buffer_bytes[b]));
    }
  }
  for (uint32_t i = 0; i < plan.tensors.size(); ++i) {
    STATICLM_RETURN_IF_ERROR(ValidateTensor(plan, i, buffers));
  }
  for (size_t i = 0; i < plan.ops.size(); ++i) {
    const Op& op = plan.ops[i];
    if (op.kind == OpKind::kMatMul && !MatMulFlagsValid(op.params)) {
      return Status::Error(StatusCode::kFormatError, "op %zu (matmul) has invalid fusion flags", i);
    }
    Arity arity = ExpectedArity(op);
    if (op.n_inputs != arity.inputs || op.n_outputs != arity.outputs) {
      return Status::Error(StatusCode::kFormatError, "op %zu (%s) has %d inputs and %d outputs", i,
                           OpKindName(op.kind), op.n_inputs, op.n_outputs);
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
    if (!OpShapesValid(plan, op)) {
      return Status::Error(StatusCode::kFormatError,
                           "op %zu (%s): tensor shapes or parameters do not agree", i,
                           OpKindName(op.kind));
    }
  }
  return Status::Ok();
}

}  // namespace staticlm
