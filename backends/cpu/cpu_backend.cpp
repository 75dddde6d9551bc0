#include "backends/cpu/cpu_backend.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "backends/cpu/reference_kernels.h"
#include "backends/plan_validation.h"

namespace staticlm::cpu {
namespace {

// Output columns per matmul task: small enough to balance two to eight threads, large enough
// that a task's work dwarfs the cost of handing it out.
constexpr int64_t kMatMulTaskColumns = 64;

// One kMatMul op, possibly fused: up to three products sharing x, then an optional SiLU-gate
// or residual accumulation applied to each task's columns as soon as they are computed (the
// same float operations as the unfused ops, so results are bitwise the same).
struct MatMulJob {
  MatMulRangeFn fn;
  int n_weights;
  DType type[3];
  const uint8_t* w[3];
  int64_t n_out[3];
  float* y[3];
  int64_t n_in, rows;
  const float* x;
  bool silu_mul;
  void (*silu_mul_fn)(float* gate, const float* up, int64_t n);
  float* acc;  // non-null: acc += y0
  int tasks_per_weight[3];
};

void MatMulTask(void* user, int task) {
  const MatMulJob& j = *static_cast<const MatMulJob*>(user);
  int i = 0;
  // With silu_mul, a task computes the same columns of gate and up, then combines them.
  if (!j.silu_mul) {
    while (task >= j.tasks_per_weight[i]) task -= j.tasks_per_weight[i++];
  }
  int64_t begin = task * kMatMulTaskColumns;
  int64_t end = std::min(begin + kMatMulTaskColumns, j.n_out[i]);
  j.fn(j.type[i], j.w[i], j.n_out[i], j.n_in, j.x, j.rows, j.y[i], begin, end);
  if (j.silu_mul) {
    j.fn(j.type[1], j.w[1], j.n_out[1], j.n_in, j.x, j.rows, j.y[1], begin, end);
    for (int64_t r = 0; r < j.rows; ++r) {
      j.silu_mul_fn(j.y[0] + r * j.n_out[0] + begin, j.y[1] + r * j.n_out[1] + begin, end - begin);
    }
  }
  if (j.acc != nullptr) {
    for (int64_t r = 0; r < j.rows; ++r) {
      ref::Add(j.acc + r * j.n_out[0] + begin, j.y[0] + r * j.n_out[0] + begin, end - begin);
    }
  }
}

// The reference product restricted to an output range, for --reference runs on threads.
void ReferenceMatMulRange(DType type, const uint8_t* w, int64_t n_out, int64_t n_in, const float* x,
                          int64_t rows, float* y, int64_t o_begin, int64_t o_end) {
  uint64_t row_bytes = DTypeBytes(type, static_cast<uint64_t>(n_in));
  for (int64_t r = 0; r < rows; ++r) {
    ref::MatMul(type, w + static_cast<uint64_t>(o_begin) * row_bytes, o_end - o_begin, n_in,
                x + r * n_in, 1, y + r * n_out + o_begin);
  }
}

struct AttentionJob {
  AttentionFn fn;
  const float* q;
  int64_t rows;
  int32_t position;
  ref::KvCacheView cache;
  float *scores, *out;
};

void AttentionTask(void* user, int head) {
  const AttentionJob& j = *static_cast<const AttentionJob*>(user);
  j.fn(j.q, j.rows, j.position, j.cache, j.scores, j.out, head, head + 1);
}

// A kKvStore's or kAttention's cache tensors, `at(i)` being the address of the i-th in KvLayout
// order (k, v, [side k, v], [recent k, v]).
template <typename At>
ref::KvCacheView ViewOf(const Plan& plan, const Op& op, uint32_t k_tensor, At at) {
  ref::KvCacheView c;
  c.params = op.params;
  c.type = plan.tensors[k_tensor].dtype;
  c.k = at(0);
  c.v = at(1);
  KvLayout layout = GetKvLayout(op.params.kv_quant);
  if (layout.store_side >= 0) {
    c.k_side = reinterpret_cast<float*>(at(2));
    c.v_side = reinterpret_cast<float*>(at(3));
  }
  if (layout.store_recent >= 0) {
    c.k_recent = reinterpret_cast<float*>(at(4));
    c.v_recent = reinterpret_cast<float*>(at(5));
  }
  return c;
}

}  // namespace

const char* CpuBackend::KernelChoice(const BackendOptions& options) {
  if (options.reference_kernels) return "reference";
  MatMulIsa isa = MatMulIsa::kReference;
  SelectMatMul(DetectCpuFeatures(), &isa);
  return MatMulIsaName(isa);
}

Status CpuBackend::ChooseMatMul(MatMulIsa* isa) {
  // An explicit request for the reference kernels wins over a plan file's choice.
  const char* wanted = options_.kernels[0] != '\0' && !options_.reference_kernels
                           ? options_.kernels
                           : KernelChoice(options_);
  for (MatMulIsa candidate :
       {MatMulIsa::kReference, MatMulIsa::kAvx2, MatMulIsa::kAvx512, MatMulIsa::kNeon}) {
    if (std::strcmp(MatMulIsaName(candidate), wanted) != 0) continue;
    if (!IsaSupported(candidate, DetectCpuFeatures()) || MatMulRangeFor(candidate) == nullptr) {
      return Status::Error(StatusCode::kUnsupported,
                           "kernels '%s' (chosen by the plan) do not run on this CPU (%s)", wanted,
                           DescribeCpuFeatures(DetectCpuFeatures()));
    }
    *isa = candidate;
    matmul_ = candidate == MatMulIsa::kReference ? ReferenceMatMulRange : MatMulRangeFor(candidate);
    return Status::Ok();
  }
  return Status::Error(StatusCode::kUnsupported, "unknown CPU kernel choice '%s'", wanted);
}

Status CpuBackend::Prepare(const Plan* const* plans, int n_plans, const BufferBinding& buffers) {
  plans_.clear();
  buffers_ = buffers;
  for (int i = 0; i < n_plans; ++i) {
    STATICLM_RETURN_IF_ERROR(ValidatePlan(*plans[i], buffers));
    BoundPlan b;
    b.plan = plans[i];
    for (const TensorRegion& t : plans[i]->tensors) {
      b.addresses.push_back(buffers.data[static_cast<int>(t.buffer)] + t.offset);
    }
    plans_.push_back(std::move(b));
  }
  MatMulIsa isa = MatMulIsa::kReference;
  STATICLM_RETURN_IF_ERROR(ChooseMatMul(&isa));
  // One attention kernel serves every op: the SIMD one only if it handles every head size.
  const char* attention_name = "reference";
  attention_ = ref::Attention;
  if (isa != MatMulIsa::kReference) {
    int64_t head_dim = 8;
    for (const BoundPlan& b : plans_) {
      for (const Op& op : b.plan->ops) {
        if (op.kind == OpKind::kAttention && op.params.head_dim % 8 != 0) head_dim = 1;
      }
    }
    attention_ = SelectAttention(DetectCpuFeatures(), head_dim, &attention_name);
  }
  ThreadPoolOptions pool_options;
  pool_options.threads = options_.threads;
  pool_options.busy_wait = options_.busy_wait;
  pool_options.pin = options_.pin_threads;
  const char* pin_warning = nullptr;
  STATICLM_RETURN_IF_ERROR(pool_.Start(pool_options, &pin_warning));
  if (pin_warning != nullptr) std::fprintf(stderr, "staticlm: warning: %s\n", pin_warning);
  STATICLM_RETURN_IF_ERROR(PrepareElementwise(isa == MatMulIsa::kReference));
  std::snprintf(description_, sizeof(description_),
                "cpu: %s matmul, %s attention, %s element-wise, %d thread%s%s%s",
                MatMulIsaName(isa), attention_name, elementwise_.name, options_.threads,
                options_.threads == 1 ? "" : "s", options_.busy_wait ? ", busy-wait" : "",
                options_.pin_threads ? ", pinned" : "");
  return Status::Ok();
}

// The element-wise kernels and the RoPE table (sized by the largest chunk and head).
Status CpuBackend::PrepareElementwise(bool reference) {
  elementwise_ = SelectElementwise(DetectCpuFeatures(), reference);
  reference_rope_ = reference;
  int64_t rows = 1, head_dim = 2;
  for (const BoundPlan& b : plans_) {
    rows = std::max<int64_t>(rows, b.plan->limits.prefill_chunk);
    for (const Op& op : b.plan->ops) {
      if (op.kind == OpKind::kRope) head_dim = std::max<int64_t>(head_dim, op.params.head_dim);
    }
  }
  return rope_angles_.Init(rows, head_dim);
}

Status CpuBackend::Execute(int plan_index, const StepParams& step) {
  if (plan_index < 0 || plan_index >= static_cast<int>(plans_.size())) {
    return Status::Error(StatusCode::kInvalidState, "no such plan prepared");
  }
  const BoundPlan& b = plans_[static_cast<size_t>(plan_index)];
  const PlanLimits& limits = b.plan->limits;
  if (step.n_tokens <= 0 || step.n_tokens > limits.prefill_chunk) {
    return Status::Error(StatusCode::kInvalidArgument, "step token count outside 1..chunk");
  }
  // Ring caches take any position (up to int32's end); a Static cache only its slots.
  const int32_t end = PlanPositionsUnbounded(*b.plan) ? INT32_MAX : limits.max_context;
  if (step.position < 0 || step.position > end - step.n_tokens) {
    return Status::Error(StatusCode::kContextFull, "step would write past the context");
  }
  for (const Op& op : b.plan->ops) RunOp(b, op, step);
  return Status::Ok();
}

void CpuBackend::RunMatMul(const BoundPlan& b, const Op& op, int64_t rows) {
  auto f32 = [&](uint32_t t) { return reinterpret_cast<float*>(b.addresses[t]); };
  const OpParams& p = op.params;
  MatMulLayout layout = GetMatMulLayout(p);
  MatMulJob job{};
  job.fn = matmul_;
  job.n_weights = layout.n_weights;
  job.x = f32(op.inputs[0]);
  job.rows = rows;
  job.silu_mul = p.silu_mul;
  job.silu_mul_fn = elementwise_.silu_mul;
  job.acc = layout.acc_output >= 0 ? f32(op.outputs[layout.acc_output]) : nullptr;
  int tasks = 0;
  for (int i = 0; i < layout.n_weights; ++i) {
    const TensorRegion& w = b.plan->tensors[op.inputs[1 + i]];
    job.type[i] = w.dtype;
    job.w[i] = b.addresses[op.inputs[1 + i]];
    job.n_out[i] = w.shape[0];
    job.n_in = w.shape[1];
    job.y[i] = f32(op.outputs[i]);
    job.tasks_per_weight[i] =
        static_cast<int>((w.shape[0] + kMatMulTaskColumns - 1) / kMatMulTaskColumns);
    if (!p.silu_mul || i == 0) tasks += job.tasks_per_weight[i];
  }
  if (p.norm_input) {  // normalise x once, on this thread, before the products read it
    float* normed = f32(op.outputs[layout.normed_output]);
    elementwise_.rms_norm(job.x, f32(op.inputs[layout.norm_weight_input]), rows, job.n_in, p.eps,
                          normed);
    job.x = normed;
  }
  pool_.ParallelFor(tasks, MatMulTask, &job);
}

void CpuBackend::RunAttention(const BoundPlan& b, const Op& op, const StepParams& step,
                              int64_t rows) {
  auto Address = [&](uint32_t t) { return b.addresses[t]; };
  // Inputs: q, k, v, scores, then the side and recent tensors (KvLayout order past scores).
  auto cache = [&](int i) { return Address(op.inputs[i < 2 ? 1 + i : 2 + i]); };
  AttentionJob job{attention_,
                   reinterpret_cast<const float*>(Address(op.inputs[0])),
                   rows,
                   step.position,
                   ViewOf(*b.plan, op, op.inputs[1], cache),
                   reinterpret_cast<float*>(Address(op.inputs[3])),
                   reinterpret_cast<float*>(Address(op.outputs[0]))};
  pool_.ParallelFor(op.params.n_heads, AttentionTask, &job);
}

void CpuBackend::RunOp(const BoundPlan& b, const Op& op, const StepParams& step) {
  auto Address = [&](uint32_t t) { return b.addresses[t]; };
  const Plan& plan = *b.plan;
  const OpParams& p = op.params;
  const TensorRegion& out = plan.tensors[op.outputs[0]];
  int64_t rows = p.rows_from_step ? step.n_tokens : out.shape[0];
  int64_t width = out.shape[1];
  float* y = reinterpret_cast<float*>(Address(op.outputs[0]));
  auto input_f32 = [&](int i) { return reinterpret_cast<const float*>(Address(op.inputs[i])); };

  switch (op.kind) {
    case OpKind::kEmbed: {
      const TensorRegion& table = plan.tensors[op.inputs[0]];
      ref::Embed(table.dtype, Address(op.inputs[0]), width,
                 reinterpret_cast<const int32_t*>(Address(op.inputs[1])), rows, y);
      return;
    }
    case OpKind::kRmsNorm:
      elementwise_.rms_norm(input_f32(0), input_f32(1), rows, width, p.eps, y);
      return;
    case OpKind::kMatMul:
      RunMatMul(b, op, rows);
      return;
    case OpKind::kRope: {
      const float* angles = reference_rope_
                                ? nullptr
                                : rope_angles_.Get(step.position, rows, p.head_dim, p.rope_base);
      if (angles != nullptr) {
        RopeAngles::Apply(y, rows, width / p.head_dim, p.head_dim, angles);
      } else {
        ref::Rope(y, rows, width / p.head_dim, p.head_dim, step.position, p.rope_base);
      }
      return;
    }
    case OpKind::kKvStore: {
      auto cache = [&](int i) { return Address(op.outputs[i]); };
      ref::KvStore(input_f32(0), input_f32(1), rows, step.position,
                   ViewOf(plan, op, op.outputs[0], cache));
      return;
    }
    case OpKind::kAttention:
      RunAttention(b, op, step, rows);
      return;
    case OpKind::kAdd:
      ref::Add(y, input_f32(0), rows * width);
      return;
    case OpKind::kSiluMul:
      elementwise_.silu_mul(y, input_f32(0), rows * width);
      return;
    case OpKind::kTakeLast: {
      const TensorRegion& x = plan.tensors[op.inputs[0]];
      std::memcpy(y, input_f32(0) + (step.n_tokens - 1) * x.shape[1],
                  static_cast<size_t>(x.shape[1]) * sizeof(float));
      return;
    }
  }
}

uint8_t* CpuBackend::HostRange(BufferId id, uint64_t offset, uint64_t bytes) const {
  if (id != BufferId::kKvCache && id != BufferId::kIo && id != BufferId::kArena) return nullptr;
  uint64_t size = buffers_.bytes[static_cast<int>(id)];
  if (offset > size || bytes > size - offset) return nullptr;
  return buffers_.data[static_cast<int>(id)] + offset;
}

Status CpuBackend::ReadBuffer(BufferId id, uint64_t offset, uint64_t bytes, void* dst) {
  const uint8_t* src = HostRange(id, offset, bytes);
  if (src == nullptr) return Status::Error(StatusCode::kInvalidArgument, "read out of bounds");
  if (bytes != 0) std::memcpy(dst, src, bytes);
  return Status::Ok();
}

Status CpuBackend::WriteBuffer(BufferId id, uint64_t offset, uint64_t bytes, const void* src) {
  uint8_t* dst = HostRange(id, offset, bytes);
  if (dst == nullptr) return Status::Error(StatusCode::kInvalidArgument, "write out of bounds");
  if (bytes != 0) std::memcpy(dst, src, bytes);
  return Status::Ok();
}

Status CpuBackend::CopyWithinBuffer(BufferId id, uint64_t src_offset, uint64_t dst_offset,
                                    uint64_t bytes) {
  uint8_t* src = HostRange(id, src_offset, bytes);
  uint8_t* dst = HostRange(id, dst_offset, bytes);
  if (src == nullptr || dst == nullptr) {
    return Status::Error(StatusCode::kInvalidArgument, "copy out of bounds");
  }
  if (bytes != 0) std::memmove(dst, src, bytes);
  return Status::Ok();
}

}  // namespace staticlm::cpu
