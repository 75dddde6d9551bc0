#include "backends/cpu/cpu_backend.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/reference_kernels.h"
#include "contract/plan_validation.h"
#include "platform/clock.h"

namespace staticlm::cpu {
namespace {

// Output columns per task of an output head's product: a multiple of 64.
constexpr int64_t kMatMulTaskColumns = 64;

// Decode products with at most this many output columns (a layer's) are split evenly between
// threads.
constexpr int64_t kEvenSplitColumns = 8192;

// Columns per task of a product with n_out columns of `rows` rows of x. A layer's product in a
// decode step (one row): one task per thread, equal, rounded up to whole packed groups. Measured on
// Zen 4 (2 threads, SmolLM2-135M decode, alternating runs): 64-column tasks (9 for a 576-row
// product) gave a 6.8-6.9 ms fastest step, 2 equal tasks per thread 5.8-6.1 ms, 1 per
// thread 5.5-5.7 ms (124-135, 132-145, 139-144 tok/s): each task claimed is a contended atomic
// between the threads, and one task streams one long contiguous run of weights, which the hardware
// prefetchers follow. An output head (49,152 to 262,144 rows) keeps about 8 tasks per thread,
// multiples of 64 columns, so that a thread that falls behind on a shared machine is helped; so do
// the products of prefill chunks, whose tasks are long enough for a claim not to matter.
int64_t TaskColumns(int64_t n_out, int64_t rows, int threads) {
  if (rows == 1 && n_out <= kEvenSplitColumns) {
    const int64_t even = (n_out + threads - 1) / threads;
    return (even + kPackedColumns - 1) / kPackedColumns * kPackedColumns;
  }
  const int64_t wide = n_out / (8 * static_cast<int64_t>(threads));
  return std::max(kMatMulTaskColumns, wide / kMatMulTaskColumns * kMatMulTaskColumns);
}

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
  int64_t task_columns;  // TaskColumns: a multiple of kPackedColumns
  MatMulIntRangeFn int_fn;
  const QuantizedActivations* xq;  // non-null: the products use x quantized to integers
  MatMulIntPackedRangeFn packed_fn;
  const uint8_t* packed[3];  // with xq: weight i's packed copy, or null for the file's layout
};

// Packed products start their ranges at group boundaries.
static_assert(kMatMulTaskColumns % kPackedColumns == 0);  // as even splits are rounded

// Weight i's product for columns [begin, end).
void Product(const MatMulJob& j, int i, int64_t begin, int64_t end) {
  if (j.xq != nullptr && j.packed[i] != nullptr) {
    j.packed_fn(j.type[i], j.packed[i], j.n_out[i], *j.xq, j.y[i], begin, end);
  } else if (j.xq != nullptr) {
    j.int_fn(j.type[i], j.w[i], j.n_out[i], *j.xq, j.y[i], begin, end);
  } else {
    j.fn(j.type[i], j.w[i], j.n_out[i], j.n_in, j.x, j.rows, j.y[i], begin, end);
  }
}

void MatMulTask(void* user, int task) {
  const MatMulJob& j = *static_cast<const MatMulJob*>(user);
  int i = 0;
  // With silu_mul, a task computes the same columns of gate and up, then combines them.
  if (!j.silu_mul) {
    while (task >= j.tasks_per_weight[i]) task -= j.tasks_per_weight[i++];
  }
  int64_t begin = task * j.task_columns;
  int64_t end = std::min(begin + j.task_columns, j.n_out[i]);
  Product(j, i, begin, end);
  if (j.silu_mul) {
    Product(j, 1, begin, end);
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

// A GELU-multiply cut into tasks of kGeluTaskValues values: a prefill chunk's (rows × FFN
// width) is worth splitting over the threads, a decode step's is one task.
constexpr int64_t kGeluTaskValues = 8192;

struct GeluJob {
  void (*fn)(float* gate, const float* up, int64_t n);
  float* gate;
  const float* up;
  int64_t n;
};

void GeluTask(void* user, int task) {
  const GeluJob& j = *static_cast<const GeluJob*>(user);
  const int64_t begin = task * kGeluTaskValues;
  j.fn(j.gate + begin, j.up + begin, std::min(kGeluTaskValues, j.n - begin));
}

// A layer's cache for every sequence: sequence s's part of tensor i starts stride[i] · s bytes
// after sequence 0's (plan.h: each cache tensor holds max_batch equal parts).
struct SequencedCache {
  ref::KvCacheView first;  // sequence 0
  uint64_t stride[6] = {0, 0, 0, 0, 0, 0};

  ref::KvCacheView Of(int32_t sequence) const {
    ref::KvCacheView c = first;
    const uint64_t s = static_cast<uint64_t>(sequence);
    auto at = [&](auto* p, int i) { return p == nullptr ? p : p + stride[i] * s / sizeof(*p); };
    c.k = at(c.k, 0);
    c.v = at(c.v, 1);
    c.k_side = at(c.k_side, 2);
    c.v_side = at(c.v_side, 3);
    c.k_recent = at(c.k_recent, 4);
    c.v_recent = at(c.v_recent, 5);
    return c;
  }
};

// A kKvStore's or kAttention's cache tensors, `tensor(i)` being the index of the i-th in KvLayout
// order (k, v, [side k, v], [recent k, v]).
template <typename Tensor>
SequencedCache CacheOf(const Plan& plan, const std::vector<uint8_t*>& addresses, const Op& op,
                       Tensor tensor) {
  SequencedCache c;
  c.first.params = op.params;
  c.first.type = plan.tensors[tensor(0)].dtype;
  const int count = GetKvLayout(op.params.kv_quant).count;
  uint8_t* at[6] = {nullptr, nullptr, nullptr, nullptr, nullptr, nullptr};
  for (int i = 0; i < count; ++i) {
    at[i] = addresses[tensor(i)];
    c.stride[i] = plan.tensors[tensor(i)].bytes() / static_cast<uint64_t>(plan.limits.max_batch);
  }
  c.first.k = at[0];
  c.first.v = at[1];
  c.first.k_side = reinterpret_cast<float*>(at[2]);
  c.first.v_side = reinterpret_cast<float*>(at[3]);
  c.first.k_recent = reinterpret_cast<float*>(at[4]);
  c.first.v_recent = reinterpret_cast<float*>(at[5]);
  const int factors = AttentionFactorsInput(op);
  if (factors >= 0)
    c.first.rope_factors = reinterpret_cast<const float*>(addresses[op.inputs[factors]]);
  return c;
}

// Attention of a step: the rows of one sequence split by head (or KV-head group), or
// (row_positions set) one row per sequence split by row and head (or group), each row with its
// own scores rows.
struct AttentionJob {
  AttentionFn fn;
  const float* q;
  int64_t rows;
  const StepParams* step;
  SequencedCache cache;
  float *scores, *out;
  int64_t n_heads, q_width, score_stride;
  int64_t heads_per_task = 1;
};

void AttentionTask(void* user, int task) {
  const AttentionJob& j = *static_cast<const AttentionJob*>(user);
  const StepParams& s = *j.step;
  const int64_t per_row = j.n_heads / j.heads_per_task;
  const int64_t head = task % per_row * j.heads_per_task;
  if (s.row_positions == nullptr) {
    j.fn(j.q, j.rows, s.position, j.cache.Of(s.sequence), j.scores, j.out, head,
         head + j.heads_per_task);
    return;
  }
  const int64_t r = task / per_row;
  j.fn(j.q + r * j.q_width, 1, s.row_positions[r], j.cache.Of(s.row_sequences[r]),
       j.scores + r * j.score_stride, j.out + r * j.q_width, head, head + j.heads_per_task);
}

// Decode attention split over the keys (attention_split.h): task t is part s of KV-head group g
// of row r, tasks [first_task[r], first_task[r + 1]) the row's, splits[r] parts a group.
struct SplitAttentionJob {
  const AttentionJob* whole;
  AttentionPartFn part;
  float* parts;  // row r, head h, part s at ((r · n_heads + h) · kMaxAttentionSplits + s) · floats
  int64_t part_floats;
  int64_t keys[kMaxAttentionSplitRows];
  int splits[kMaxAttentionSplitRows];
  int first_task[kMaxAttentionSplitRows + 1];
};

void SplitAttentionTask(void* user, int task) {
  const SplitAttentionJob& j = *static_cast<const SplitAttentionJob*>(user);
  const AttentionJob& w = *j.whole;
  const StepParams& step = *w.step;
  int r = 0;
  while (task >= j.first_task[r + 1]) ++r;
  const int local = task - j.first_task[r];
  const int64_t head = local / j.splits[r] * w.heads_per_task;
  const int split = local % j.splits[r];
  const bool batched = step.row_positions != nullptr;
  const int32_t position = batched ? step.row_positions[r] : step.position;
  const ref::KvCacheView cache = w.cache.Of(batched ? step.row_sequences[r] : step.sequence);
  const float* q = w.q + r * w.q_width;
  float* scores = w.scores + (batched ? r * w.score_stride : 0);
  if (j.splits[r] == 1) {
    w.fn(q, 1, position, cache, scores, w.out + r * w.q_width, head, head + w.heads_per_task);
    return;
  }
  const int64_t begin = AttentionSplitBegin(j.keys[r], split, j.splits[r]);
  const int64_t end = AttentionSplitBegin(j.keys[r], split + 1, j.splits[r]);
  float* parts = j.parts + ((r * w.n_heads + head) * kMaxAttentionSplits + split) * j.part_floats;
  j.part(q, position, cache, scores, head, head + w.heads_per_task, begin, end, parts,
         kMaxAttentionSplits * j.part_floats);
}

// Decode rows (one, or a batch's) by KV-head group and part of their keys, then each split
// row's heads merged from their parts on the caller.
void RunSplitAttention(ThreadPool& pool, AttentionPartFn part, float* parts,
                       const AttentionJob& whole, const OpParams& p, const StepParams& step,
                       int64_t rows) {
  SplitAttentionJob job;
  job.whole = &whole;
  job.part = part;
  job.parts = parts;
  job.part_floats = AttentionPartFloats(p.head_dim);
  const int groups = p.n_kv_heads;
  job.first_task[0] = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const int32_t position = step.row_positions != nullptr ? step.row_positions[r] : step.position;
    job.keys[r] = AttendedKeys(p, position);
    job.splits[r] = AttentionSplits(job.keys[r], groups);
    job.first_task[r + 1] = job.first_task[r] + groups * job.splits[r];
  }
  pool.ParallelFor(job.first_task[rows], SplitAttentionTask, &job);
  const bool hadamard = p.kv_quant == KvQuant::kQ8;
  for (int64_t r = 0; r < rows; ++r) {
    if (job.splits[r] == 1) continue;
    for (int64_t h = 0; h < p.n_heads; ++h) {
      MergeAttentionParts(job.parts + (r * p.n_heads + h) * kMaxAttentionSplits * job.part_floats,
                          job.splits[r], p.head_dim, hadamard,
                          whole.out + r * whole.q_width + h * p.head_dim);
    }
  }
}

// Whether `op` is a product whose activations are quantized: every weight of it has an integer
// kernel for `bits`-bit activations, as RunMatMul decides.
bool IsIntegerProduct(const Plan& plan, const Op& op, int bits) {
  if (op.kind != OpKind::kMatMul) return false;
  const MatMulLayout layout = GetMatMulLayout(op.params);
  for (int i = 0; i < layout.n_weights; ++i) {
    if (!IntSupportsType(plan.tensors[op.inputs[1 + i]].dtype, bits)) return false;
  }
  return true;
}

// Calls f(tensor index) for each weight of `plan` that a packed product would read: the weights
// of a packed type (PackedSupportsType) of integer products (IsIntegerProduct).
template <class F>
void ForEachPackableWeight(const Plan& plan, int bits, F f) {
  for (const Op& op : plan.ops) {
    if (!IsIntegerProduct(plan, op, bits)) continue;
    const MatMulLayout layout = GetMatMulLayout(op.params);
    for (int i = 0; i < layout.n_weights; ++i) {
      if (PackedSupportsType(plan.tensors[op.inputs[1 + i]].dtype)) f(op.inputs[1 + i]);
    }
  }
}

// Calls f(tensor index) for each weight an op of `plan` reads other than through a packed
// product (ForEachPackableWeight's complement among the weights: an embedding's rows, a norm's
// weight, a product with f32 activations or of a type without a packed layout).
template <class F>
void ForEachWeightReadUnpacked(const Plan& plan, int bits, F f) {
  for (const Op& op : plan.ops) {
    const bool integer = IsIntegerProduct(plan, op, bits);
    const int n_weights = integer ? GetMatMulLayout(op.params).n_weights : 0;
    for (int k = 0; k < op.n_inputs; ++k) {
      const uint32_t t = op.inputs[k];
      if (plan.tensors[t].buffer != BufferId::kWeights) continue;
      const bool packed =
          integer && k >= 1 && k <= n_weights && PackedSupportsType(plan.tensors[t].dtype);
      if (!packed) f(t);
    }
  }
}

// The integer kernels Prepare would choose for `options`, given the CPU features it may use.
IntKernels IntKernelsForOptions(const BackendOptions& options, const CpuFeatures& usable) {
  MatMulIsa isa = MatMulIsa::kReference;
  SelectMatMul(usable, &isa);
  const int bits = options.quantized_activations;
  if (bits != 8 && bits != 16) return {};
  return isa == MatMulIsa::kReference ? IntKernelsFor(IntIsa::kReference, bits)
                                      : SelectIntKernels(usable, bits);
}

}  // namespace

uint64_t CpuBackend::PackedWeightBytes(const Plan* const* plans, int n_plans,
                                       const BackendOptions& options) {
  CpuFeatures usable;
  if (!UsableCpuFeatures(options, &usable).ok()) return 0;
  if (IntKernelsForOptions(options, usable).packed_matmul == nullptr) return 0;
  std::vector<uint64_t> seen;  // weight offsets, each packed once
  uint64_t bytes = 0;
  for (int p = 0; p < n_plans; ++p) {
    ForEachPackableWeight(*plans[p], options.quantized_activations, [&](uint32_t t) {
      const TensorRegion& w = plans[p]->tensors[t];
      if (std::find(seen.begin(), seen.end(), w.offset) != seen.end()) return;
      seen.push_back(w.offset);
      bytes += (PackedBytes(w.dtype, w.shape[0], w.shape[1]) + 63) / 64 * 64;
    });
  }
  return bytes;
}

const char* CpuBackend::KernelChoice(const BackendOptions& options) {
  CpuFeatures usable;
  if (!UsableCpuFeatures(options, &usable).ok()) {
    // Record what was asked, so a plan file made here fails where it is loaded, loudly.
    CpuIsa isa = CpuIsa::kAuto;
    const char* source = "";
    if (!RequestedIsa(options, &isa, &source).ok()) return "";
    return isa == CpuIsa::kScalar ? MatMulIsaName(MatMulIsa::kReference) : CpuIsaName(isa);
  }
  MatMulIsa isa = MatMulIsa::kReference;
  SelectMatMul(usable, &isa);
  return MatMulIsaName(isa);
}

Status CpuBackend::ChooseMatMul(MatMulIsa* isa) {
  STATICLM_RETURN_IF_ERROR(UsableCpuFeatures(options_, &features_));
  SelectMatMul(features_, isa);
  matmul_ = *isa == MatMulIsa::kReference ? ref::MatMulColumns : MatMulRangeFor(*isa);
  return Status::Ok();
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
    int64_t head_dim = 0;  // 1 when layers differ: only the reference takes any size
    KvQuant kv_quant = KvQuant::kNone;
    size_t part_floats = 0;  // the split decode rows' parts, for the plan that needs the most
    for (const BoundPlan& b : plans_) {
      const PlanLimits& l = b.plan->limits;
      const int64_t decode_rows = l.rows_are_sequences ? l.max_batch : 1;
      for (const Op& op : b.plan->ops) {
        if (op.kind != OpKind::kAttention) continue;
        head_dim = head_dim == 0 || head_dim == op.params.head_dim ? op.params.head_dim : 1;
        kv_quant = op.params.kv_quant;
        const int64_t floats = decode_rows * op.params.n_heads * kMaxAttentionSplits *
                               AttentionPartFloats(op.params.head_dim);
        if (decode_rows <= kMaxAttentionSplitRows) {
          part_floats = std::max(part_floats, static_cast<size_t>(floats));
        }
      }
    }
    attention_ = SelectAttention(features_, head_dim, &attention_name, &attention_groups_, kv_quant,
                                 &attention_part_);
    if (attention_part_ != nullptr) attention_parts_.assign(part_floats, 0.0f);
  }
  ThreadPoolOptions pool_options;
  pool_options.threads = options_.threads;
  pool_options.busy_wait = options_.busy_wait;
  pool_options.pin = options_.pin_threads;
  const char* pin_warning = nullptr;
  STATICLM_RETURN_IF_ERROR(pool_.Start(pool_options, &pin_warning));
  if (pin_warning != nullptr) std::fprintf(stderr, "staticlm: warning: %s\n", pin_warning);
  STATICLM_RETURN_IF_ERROR(PrepareElementwise(isa == MatMulIsa::kReference));
  STATICLM_RETURN_IF_ERROR(PrepareQuantizedActivations(isa == MatMulIsa::kReference));
  STATICLM_RETURN_IF_ERROR(PreparePackedWeights());
  // The ISA first, and the ones this CPU offers, so a report shows what --isa could choose.
  char isa_choice[96];
  STATICLM_RETURN_IF_ERROR(DescribeIsaChoice(options_, isa_choice, sizeof(isa_choice)));
  std::snprintf(description_, sizeof(description_),
                "cpu: %s, %s matmul, %s attention, %s element-wise, %d thread%s%s%s", isa_choice,
                MatMulIsaName(isa), attention_name, elementwise_.name, options_.threads,
                options_.threads == 1 ? "" : "s", options_.busy_wait ? ", busy-wait" : "",
                options_.pin_threads ? ", pinned" : "");
  if (int_kernels_.matmul != nullptr) {
    const size_t used = std::strlen(description_);
    std::snprintf(description_ + used, sizeof(description_) - used, ", %s activations",
                  int_kernels_.name);
  }
  if (packed_weights_.count() > 0) {
    const size_t used = std::strlen(description_);
    std::snprintf(description_ + used, sizeof(description_) - used,
                  ", %zu matrices packed (%.1f MiB)", packed_weights_.count(),
                  static_cast<double>(packed_weights_.bytes()) / 1048576.0);
  }
  return Status::Ok();
}

// With quantized_activations 8 or 16: the integer kernels of that width, if this CPU has
// integer dot products (or the integer reference with the reference kernels), and a buffer for
// the widest quantized product's x. Otherwise every product keeps f32 activations.
Status CpuBackend::PrepareQuantizedActivations(bool reference) {
  int_kernels_ = {};
  const int bits = options_.quantized_activations;
  if (bits == 0) return Status::Ok();
  if (bits != 8 && bits != 16) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "quantized activations must be 0 (off), 8 or 16 bits, not %d", bits);
  }
  const IntKernels kernels =
      reference ? IntKernelsFor(IntIsa::kReference, bits) : SelectIntKernels(features_, bits);
  if (kernels.matmul == nullptr) return Status::Ok();
  int64_t rows = 0, n_in = 0;
  for (const BoundPlan& b : plans_) {
    for (const Op& op : b.plan->ops) {
      if (op.kind != OpKind::kMatMul) continue;
      const TensorRegion& w = b.plan->tensors[op.inputs[1]];
      if (!IntSupportsType(w.dtype, bits)) continue;
      rows = std::max<int64_t>(rows, b.plan->tensors[op.outputs[0]].shape[0]);
      n_in = std::max<int64_t>(n_in, w.shape[1]);
    }
  }
  if (n_in == 0) return Status::Ok();  // no quantized weights to multiply
  STATICLM_RETURN_IF_ERROR(x_quantized_.Init(rows, n_in));
  int_kernels_ = kernels;
  return Status::Ok();
}

// With int8 activations on AVX2, AVX-512 VNNI or NEON dot products: the Q8_0, Q4_0, Q4_1, Q5_0,
// Q5_1, Q6_K, Q4_K and Q5_K weights the products read, packed once into the layout those kernels
// stream (packed_weights.h). The file's copy of a matrix nothing else reads (not a tied embedding)
// is paged out once packed.
Status CpuBackend::PreparePackedWeights() {
  std::vector<PackedWeights::Matrix> matrices;
  if (int_kernels_.packed_matmul != nullptr) {
    std::vector<const uint8_t*> read_unpacked;  // their file copy stays resident
    for (const BoundPlan& b : plans_) {
      ForEachWeightReadUnpacked(*b.plan, int_kernels_.bits,
                                [&](uint32_t t) { read_unpacked.push_back(b.addresses[t]); });
    }
    for (const BoundPlan& b : plans_) {
      ForEachPackableWeight(*b.plan, int_kernels_.bits, [&](uint32_t t) {
        const TensorRegion& w = b.plan->tensors[t];
        const bool alone = std::find(read_unpacked.begin(), read_unpacked.end(), b.addresses[t]) ==
                           read_unpacked.end();
        matrices.push_back({b.addresses[t], w.dtype, w.shape[0], w.shape[1], alone});
      });
    }
  }
  return packed_weights_.Build(matrices,
                               options_.huge_pages ? Pages::kHugeWherePossible : Pages::kNormal);
}

// The element-wise kernels and the RoPE table (sized by the largest chunk and head).
Status CpuBackend::PrepareElementwise(bool reference) {
  elementwise_ = SelectElementwise(features_, reference);
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
  STATICLM_RETURN_IF_ERROR(CheckStep(*b.plan, step));
  if (!options_.profile_ops) {
    for (const Op& op : b.plan->ops) RunOp(b, op, step);
    return Status::Ok();
  }
  for (const Op& op : b.plan->ops) {
    const double start = NowSeconds();
    RunOp(b, op, step);
    op_profile_.Add(*b.plan, op, NowSeconds() - start);
  }
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
  int64_t widest = 0;
  for (int i = 0; i < layout.n_weights; ++i) {
    widest = std::max<int64_t>(widest, b.plan->tensors[op.inputs[1 + i]].shape[0]);
  }
  job.task_columns = TaskColumns(widest, rows, options_.threads);
  for (int i = 0; i < layout.n_weights; ++i) {
    const TensorRegion& w = b.plan->tensors[op.inputs[1 + i]];
    job.type[i] = w.dtype;
    job.w[i] = b.addresses[op.inputs[1 + i]];
    job.n_out[i] = w.shape[0];
    job.n_in = w.shape[1];
    job.y[i] = f32(op.outputs[i]);
    job.tasks_per_weight[i] =
        static_cast<int>((w.shape[0] + job.task_columns - 1) / job.task_columns);
    if (!p.silu_mul || i == 0) tasks += job.tasks_per_weight[i];
  }
  if (p.norm_input) {  // normalise x once, on this thread, before the products read it
    float* normed = f32(op.outputs[layout.normed_output]);
    elementwise_.rms_norm(job.x, f32(op.inputs[layout.norm_weight_input]), rows, job.n_in, p.eps,
                          normed);
    job.x = normed;
  }
  QuantizedActivations xq;  // quantized once, on this thread, for every task and product
  bool quantize = int_kernels_.matmul != nullptr;
  for (int i = 0; i < layout.n_weights; ++i)
    quantize = quantize && IntSupportsType(job.type[i], int_kernels_.bits);
  if (quantize) xq = x_quantized_.Quantize(int_kernels_, job.x, rows, job.n_in);
  if (xq.q != nullptr) {
    job.int_fn = int_kernels_.matmul;
    job.xq = &xq;
    job.packed_fn = int_kernels_.packed_matmul;
    for (int i = 0; i < layout.n_weights && job.packed_fn != nullptr; ++i) {
      job.packed[i] = packed_weights_.Find(job.w[i]);
    }
  }
  pool_.ParallelFor(tasks, MatMulTask, &job);
}

void CpuBackend::RunAttention(const BoundPlan& b, const Op& op, const StepParams& step,
                              int64_t rows) {
  auto Address = [&](uint32_t t) { return b.addresses[t]; };
  // Inputs: q, k, v, scores, then the side and recent tensors (KvLayout order past scores).
  auto cache = [&](int i) { return op.inputs[i < 2 ? 1 + i : 2 + i]; };
  const OpParams& p = op.params;
  AttentionJob job{attention_,
                   reinterpret_cast<const float*>(Address(op.inputs[0])),
                   rows,
                   &step,
                   CacheOf(*b.plan, b.addresses, op, cache),
                   reinterpret_cast<float*>(Address(op.inputs[3])),
                   reinterpret_cast<float*>(Address(op.outputs[0])),
                   p.n_heads,
                   int64_t{p.n_heads} * p.head_dim,
                   int64_t{p.n_heads} * p.cache_slots};
  // One head per task, or whole KV-head groups for a kernel that serves them together (decode
  // reads the cache once per group). Not for the many rows of a prefill chunk: that work is
  // arithmetic, and a few groups would balance badly over the threads.
  const bool groups = attention_groups_ && (rows == 1 || step.row_positions != nullptr);
  job.heads_per_task = groups ? p.n_heads / p.n_kv_heads : 1;
  const int64_t per_row = p.n_heads / job.heads_per_task;
  if (groups && attention_part_ != nullptr && rows <= kMaxAttentionSplitRows) {
    RunSplitAttention(pool_, attention_part_, attention_parts_.data(), job, p, step, rows);
    return;
  }
  const int64_t tasks = step.row_positions == nullptr ? per_row : rows * per_row;
  pool_.ParallelFor(static_cast<int>(tasks), AttentionTask, &job);
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
      if (p.embed_scale != 1.0f) {
        for (int64_t i = 0; i < rows * width; ++i) y[i] *= p.embed_scale;
      }
      return;
    }
    case OpKind::kRmsNorm:
      // Per head, a row of heads is that many rows of one head each (rows are contiguous).
      if (p.norm_group > 0) {
        elementwise_.rms_norm(input_f32(0), input_f32(1), rows * (width / p.norm_group),
                              p.norm_group, p.eps, y);
      } else {
        elementwise_.rms_norm(input_f32(0), input_f32(1), rows, width, p.eps, y);
      }
      return;
    case OpKind::kMatMul:
      RunMatMul(b, op, rows);
      return;
    case OpKind::kRope:
      RunRope(op, step, rows, width, op.n_inputs == 1 ? input_f32(0) : nullptr, y);
      return;
    case OpKind::kKvStore: {
      auto cache = [&](int i) { return op.outputs[i]; };
      const SequencedCache c = CacheOf(plan, b.addresses, op, cache);
      if (step.row_positions == nullptr) {
        ref::KvStore(input_f32(0), input_f32(1), rows, step.position, c.Of(step.sequence));
        return;
      }
      const int64_t kv_width = int64_t{p.n_kv_heads} * p.head_dim;
      for (int64_t r = 0; r < rows; ++r) {
        ref::KvStore(input_f32(0) + r * kv_width, input_f32(1) + r * kv_width, 1,
                     step.row_positions[r], c.Of(step.row_sequences[r]));
      }
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
    case OpKind::kGeluMul: {
      GeluJob job{elementwise_.gelu_mul, y, input_f32(0), rows * width};
      const int64_t tasks = (job.n + kGeluTaskValues - 1) / kGeluTaskValues;
      if (tasks <= 1) {
        job.fn(job.gate, job.up, job.n);
      } else {
        pool_.ParallelFor(static_cast<int>(tasks), GeluTask, &job);
      }
      return;
    }
    case OpKind::kAddBias:
      ref::AddBias(y, input_f32(0), rows, width);
      return;
    case OpKind::kTakeLast: {
      const TensorRegion& x = plan.tensors[op.inputs[0]];
      std::memcpy(y, input_f32(0) + (step.n_tokens - 1) * x.shape[1],
                  static_cast<size_t>(x.shape[1]) * sizeof(float));
      return;
    }
  }
}

// The rows of one sequence from step.position on, or one row per sequence at its own position:
// the same angles either way (RopeAngles computes them as ref::Rope and ref::RopeScaled do).
void CpuBackend::RunRope(const Op& op, const StepParams& step, int64_t rows, int64_t width,
                         const float* factors, float* x) {
  const OpParams& p = op.params;
  const int64_t heads = width / p.head_dim, rope_dims = RopeDims(p);
  const bool by_row = step.row_positions != nullptr;
  const float* angles = nullptr;
  if (!reference_rope_) {
    angles = by_row ? rope_angles_.GetRows(step.row_positions, rows, rope_dims, p.rope_base,
                                           factors, p.rope_scale)
                    : rope_angles_.Get(step.position, rows, rope_dims, p.rope_base, factors,
                                       p.rope_scale);
  }
  if (angles != nullptr) {
    (p.rope_halves ? RopeAngles::ApplyHalves : RopeAngles::Apply)(x, rows, heads, p.head_dim,
                                                                  rope_dims, angles);
    return;
  }
  const bool plain = factors == nullptr && p.rope_scale == 1.0f && rope_dims == p.head_dim;
  auto rope = [&](float* first_row, int64_t n, int32_t position) {
    if (plain) {
      (p.rope_halves ? ref::RopeHalves : ref::Rope)(first_row, n, heads, p.head_dim, position,
                                                    p.rope_base);
    } else {
      ref::RopeScaled(first_row, n, heads, p.head_dim, rope_dims, position, p.rope_base, factors,
                      p.rope_scale, p.rope_halves);
    }
  };
  if (!by_row) {
    rope(x, rows, step.position);
  } else {
    for (int64_t r = 0; r < rows; ++r) rope(x + r * width, 1, step.row_positions[r]);
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
