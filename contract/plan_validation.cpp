#include "contract/plan_validation.h"

#include "contract/kv_policy.h"

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
    case OpKind::kRope:  // with or without frequency factors
      return {op.n_inputs <= 1 ? op.n_inputs : 0, 1};
    case OpKind::kKvStore:
      return {2, GetKvLayout(op.params.kv_quant).count};
    case OpKind::kAttention: {  // with or without a sink cache's RoPE factors
      const int inputs = 2 + GetKvLayout(op.params.kv_quant).count;
      return {op.n_inputs == inputs + 1 ? inputs + 1 : inputs, 1};
    }
    case OpKind::kAdd:
      return {1, 1};
    case OpKind::kSiluMul:
    case OpKind::kGeluMul:
      return {1, 1};
    case OpKind::kTakeLast:
    case OpKind::kAddBias:
      return {1, 1};
  }
  return {-1, -1};
}

Status ValidateTensor(const Plan& plan, uint32_t index, const BufferBinding& buffers) {
  const TensorRegion& t = plan.tensors[index];
  int b = static_cast<int>(t.buffer);
  if (!IsKnownPlanDType(static_cast<uint32_t>(t.dtype))) {
    return Status::Error(StatusCode::kFormatError, "plan tensor %u has an unknown type", index);
  }
  if (b < 0 || b >= kBufferCount) {
    return Status::Error(StatusCode::kFormatError, "plan tensor %u (%s) names buffer %d", index,
                         t.name, b);
  }
  for (int d = 0; d < 4; ++d) {
    if (t.shape[d] <= 0) {
      return Status::Error(StatusCode::kFormatError, "plan tensor %u (%s) has dim %d = %lld", index,
                           t.name, d, static_cast<long long>(t.shape[d]));
    }
  }
  if (!TensorShapeInRange(t)) {
    return Status::Error(StatusCode::kFormatError, "plan tensor %u has an oversized shape", index);
  }
  // Kernels access f32/i32 data (and everything outside the weights) as 4-byte words.
  if ((t.buffer != BufferId::kWeights || t.dtype == DType::kF32 || t.dtype == DType::kI32) &&
      t.offset % 4 != 0) {
    return Status::Error(StatusCode::kFormatError, "plan tensor %u (%s) is misaligned", index,
                         t.name);
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

// RoPE frequency factors: one F32 per pair of a head, in the weights (a device backend reads
// them from the weights the host holds when it computes a step's angles).
bool IsRopeFactors(const TensorRegion& t, const OpParams& p) {
  return t.buffer == BufferId::kWeights && t.dtype == DType::kF32 &&
         t.elements() == RopeDims(p) / 2;
}

// OpParams::rope_dims: 0 (the whole head), or an even part of it.
bool RopeDimsValid(const OpParams& p) {
  return p.rope_dims == 0 || (p.rope_dims > 0 && p.rope_dims % 2 == 0 && p.rope_dims < p.head_dim);
}

bool HasShape(const TensorRegion& t, DType dtype, int64_t d0, int64_t d1, int64_t d2 = 1,
              int64_t d3 = 1) {
  return t.dtype == dtype && t.shape[0] == d0 && t.shape[1] == d1 && t.shape[2] == d2 &&
         t.shape[3] == d3;
}

DType CacheDType(const OpParams& p, DType plain) {
  switch (p.kv_quant) {
    case KvQuant::kNone:
      return plain == DType::kF16 ? DType::kF16 : DType::kF32;
    case KvQuant::kQ8:
      return kDTypeI8;
    case KvQuant::kQ4:
      return kDTypeKvQ4;
  }
  return DType::kF32;
}

// The policy's numbers: every slot a kernel computes from them lies in 0 … cache_slots − 1, and
// (for the rings) no chunk of up to prefill_chunk tokens overwrites a slot one of its own
// queries still reads.
bool PolicyValid(const OpParams& p, const PlanLimits& l) {
  const int64_t chunk = TokensPerSequence(l);
  const int64_t slots = p.cache_slots;
  if (slots <= 0 || slots > (int64_t(1) << 30)) return false;
  switch (p.cache_policy) {
    case CachePolicy::kStatic:
      if (p.window != 0 || p.sinks != 0 || slots < l.max_context) return false;
      break;
    case CachePolicy::kSlidingWindow:
      if (p.window < 1 || p.sinks != 0 || slots < p.window + chunk - 1) return false;
      break;
    case CachePolicy::kSink:
      // The ring after the sinks' slots holds the window's other positions and a chunk.
      if (p.sinks < 1 || p.window <= p.sinks ||
          slots - SinkSlots(p) < p.window - p.sinks + chunk - 1) {
        return false;
      }
      break;
    default:
      return false;
  }
  if (p.kv_quant == KvQuant::kQ4) {
    // Its groups fill aligned runs of slots (a Sink cache's ring starts on a group boundary:
    // SinkSlots).
    return p.kv_group >= 1 && slots % p.kv_group == 0 && p.recent_slots >= p.kv_group + chunk - 1 &&
           p.recent_slots <= (int64_t(1) << 30);
  }
  return p.kv_quant <= KvQuant::kQ4 && p.kv_group == 0 && p.recent_slots == 0;
}

// The cache tensors of a kKvStore (its outputs) or kAttention (its inputs from 1), `at(i)`
// giving the i-th of KvLayout's order: k, v, [k side, v side], [k recent, v recent].
template <typename At>
bool CacheTensorsValid(const OpParams& p, const PlanLimits& l, At at) {
  if (!PolicyValid(p, l)) return false;
  // Every sequence's cache: max_batch parts of kv_heads head rows each.
  const int64_t heads = int64_t{l.max_batch} * p.n_kv_heads, slots = p.cache_slots, hd = p.head_dim;
  const DType type = CacheDType(p, at(0).dtype);
  if (!HasShape(at(0), type, heads, slots, hd) || !HasShape(at(1), type, heads, slots, hd)) {
    return false;
  }
  if (p.kv_quant == KvQuant::kQ8) {
    return HasShape(at(2), DType::kF32, heads, slots) && HasShape(at(3), DType::kF32, heads, slots);
  }
  if (p.kv_quant == KvQuant::kQ4) {
    return HasShape(at(2), DType::kF32, heads, slots / p.kv_group, 2, hd) &&
           HasShape(at(3), DType::kF32, heads, slots, 2) &&
           HasShape(at(4), DType::kF32, heads, p.recent_slots, hd) &&
           HasShape(at(5), DType::kF32, heads, p.recent_slots, hd);
  }
  return true;
}

// Bounded so that products of heads, head size, slots and rows stay far from overflow.
bool HeadsValid(const OpParams& p) {
  return p.n_heads > 0 && p.n_heads <= 4096 && p.n_kv_heads > 0 && p.head_dim > 0 &&
         p.head_dim % 2 == 0 && p.head_dim <= 256 && p.n_heads % p.n_kv_heads == 0;
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
    if (!IsWeightMatrixDType(w.dtype) || w.shape[1] != k || w.shape[2] != 1 || w.shape[3] != 1 ||
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
  // In a batched plan the ops that read a row's sequence and position take the step's rows.
  const bool per_row = op.kind == OpKind::kRope || op.kind == OpKind::kKvStore ||
                       op.kind == OpKind::kAttention || op.kind == OpKind::kTakeLast;
  if (l.rows_are_sequences && per_row && !p.rows_from_step) return false;
  switch (op.kind) {
    case OpKind::kEmbed:
      return IsWeightMatrixDType(in(0).dtype) && in(0).shape[1] == out.shape[1] &&
             in(0).shape[1] % GetDTypeInfo(in(0).dtype).block_elements == 0 &&
             in(1).dtype == DType::kI32 && in(1).elements() >= rows && p.embed_scale > 0.0f &&
             IsF32Matrix(out, rows, out.shape[1]);
    case OpKind::kRmsNorm: {
      // Per head: the weight covers one head, and the row is a whole number of heads.
      const int64_t norm_width = p.norm_group > 0 ? p.norm_group : out.shape[1];
      return p.norm_group >= 0 && out.shape[1] % norm_width == 0 && in(1).dtype == DType::kF32 &&
             in(1).elements() == norm_width && IsF32Matrix(in(0), rows, out.shape[1]) &&
             IsF32Matrix(out, rows, out.shape[1]);
    }
    case OpKind::kMatMul:
      return MatMulShapesValid(plan, op, rows);
    case OpKind::kRope:
      // Optional frequency factors (IsRopeFactors).
      return p.head_dim > 0 && p.head_dim % 2 == 0 && out.shape[1] % p.head_dim == 0 &&
             RopeDimsValid(p) && p.rope_base > 0.0f && p.rope_scale > 0.0f && p.rope_scale < 1e6f &&
             (op.n_inputs == 0 || IsRopeFactors(in(0), p)) && IsF32Matrix(out, rows, out.shape[1]);
    case OpKind::kAddBias:
      return in(0).dtype == DType::kF32 && in(0).elements() == out.shape[1] &&
             IsF32Matrix(out, rows, out.shape[1]);
    case OpKind::kKvStore:
      return HeadsValid(p) && IsF32Matrix(in(0), rows, p.n_kv_heads * p.head_dim) &&
             IsF32Matrix(in(1), rows, p.n_kv_heads * p.head_dim) &&
             CacheTensorsValid(
                 p, l, [&](int i) -> const TensorRegion& { return plan.tensors[op.outputs[i]]; });
    case OpKind::kAttention: {
      // q, k, v, scores, then the side and recent tensors: KvLayout order shifted past scores;
      // a sink cache's RoPE factors last.
      auto cache = [&](int i) -> const TensorRegion& { return in(i < 2 ? 1 + i : 2 + i); };
      const int factors = AttentionFactorsInput(op);
      // The sink query's RoPE pairing and width mean nothing to other caches (contract/plan.h).
      if ((p.rope_halves || p.rope_dims != 0) && p.cache_policy != CachePolicy::kSink) {
        return false;
      }
      if (!RopeDimsValid(p)) return false;
      if (factors >= 0 &&
          (p.cache_policy != CachePolicy::kSink || !IsRopeFactors(in(factors), p))) {
        return false;
      }
      return HeadsValid(p) && IsF32Matrix(in(0), rows, p.n_heads * p.head_dim) &&
             CacheTensorsValid(p, l, cache) && p.rope_base > 0.0f && in(3).dtype == DType::kF32 &&
             in(3).elements() >=
                 int64_t{l.rows_are_sequences ? l.max_batch : 1} * p.n_heads * p.cache_slots &&
             IsF32Matrix(out, rows, p.n_heads * p.head_dim);
    }
    case OpKind::kAdd:
    case OpKind::kSiluMul:
    case OpKind::kGeluMul:
      return IsF32Matrix(in(0), rows, out.shape[1]) && IsF32Matrix(out, rows, out.shape[1]);
    case OpKind::kTakeLast:
      return IsF32Matrix(in(0), l.prefill_chunk, out.shape[1]) && IsF32Matrix(out, 1, out.shape[1]);
  }
  return false;
}

}  // namespace

bool TensorShapeInRange(const TensorRegion& t) {
  int64_t elements = 1;
  for (int d = 0; d < 4; ++d) {
    // Dims up to 2^31 and a product up to 2^48 keep every byte count far from overflow.
    if (t.shape[d] <= 0 || t.shape[d] > (int64_t(1) << 31) ||
        elements > (int64_t(1) << 48) / t.shape[d]) {
      return false;
    }
    elements *= t.shape[d];
  }
  return true;
}

Status ValidatePlan(const Plan& plan, const BufferBinding& buffers) {
  const PlanLimits& l = plan.limits;
  if (l.prefill_chunk <= 0 || l.max_context <= 0 || l.max_batch < 1 || l.max_batch > kMaxBatch ||
      (l.rows_are_sequences && l.prefill_chunk != l.max_batch) ||
      TokensPerSequence(l) > l.max_context || l.window < 0 || l.sinks < 0 || l.global_every < 0 ||
      l.global_window < 0 || l.cache_chunk < 0) {
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

Status CheckStep(const Plan& plan, const StepParams& step) {
  const PlanLimits& l = plan.limits;
  if (step.n_tokens <= 0 || step.n_tokens > l.prefill_chunk) {
    return Status::Error(StatusCode::kInvalidArgument, "step token count outside 1..chunk");
  }
  // Ring caches take any position (up to int32's end); a Static cache only its slots.
  const int32_t end = PlanPositionsUnbounded(plan) ? INT32_MAX : l.max_context;
  if (!l.rows_are_sequences) {
    if (step.row_positions != nullptr || step.row_sequences != nullptr) {
      return Status::Error(StatusCode::kInvalidArgument, "per-row positions need a batched plan");
    }
    if (step.sequence < 0 || step.sequence >= l.max_batch) {
      return Status::Error(StatusCode::kInvalidArgument, "sequence id outside 0..max_batch-1");
    }
    if (step.position < 0 || step.position > end - step.n_tokens) {
      return Status::Error(StatusCode::kContextFull, "step would write past the context");
    }
    return Status::Ok();
  }
  if (step.row_positions == nullptr || step.row_sequences == nullptr) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "a batched step needs each row's sequence and position");
  }
  uint64_t seen = 0;  // kMaxBatch ≤ 64 sequences
  for (int32_t r = 0; r < step.n_tokens; ++r) {
    const int32_t s = step.row_sequences[r], p = step.row_positions[r];
    if (s < 0 || s >= l.max_batch) {
      return Status::Error(StatusCode::kInvalidArgument, "sequence id outside 0..max_batch-1");
    }
    if ((seen >> s) & 1) {
      return Status::Error(StatusCode::kInvalidArgument, "a sequence appears twice in one step");
    }
    seen |= uint64_t{1} << s;
    if (p < 0 || p > end - 1) {
      return Status::Error(StatusCode::kContextFull, "step would write past the context");
    }
  }
  return Status::Ok();
}

}  // namespace staticlm
