// kAttention of decode steps (one row, or rows that are sequences; prefill chunks are
// attention_prefill.cu's), every cache policy and type (kv_access.h reads each). A block of 4 warps
// per (split, query head, row): the row's attended positions (the sinks, then the recent span) are
// cut into `splits` equal parts; in its part each warp takes every 4th position, a lane per 32nd
// dim, scoring with a warp sum and folding the value into an online softmax (MergeSoftmax,
// kernel_math.h). The warps' partials merge in shared memory. With one split the block writes
// the output; with several (flash-decoding over the cache length) it writes its partial into
// the backend's attention_partials, and the last block of the (row, head) to finish (a count in
// attention_arrivals) merges them: no second launch. A split per 32 positions the op may attend
// to, up to 64, all of them used at every depth: a warp's positions are a chain of dependent
// loads (key, score, value), so the most splits, each with the fewest positions, finish first.
// Measured on an H100 (bench/results/2026-11-26b-h100-cuda.md): using only one split per 32
// positions attended so far (fewer, longer chains, a merge of fewer partials) made SmolLM2's
// decode 16 % slower at depth 0 and 10 % at 1,024.
#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/kernel_math.h"
#include "backends/cuda/kernels/kv_access.h"

namespace staticlm::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kMaxDimsPerLane = 8;  // head_dim ≤ 256 (plan validation)
constexpr int kMaxSplits = 64;
constexpr int kPositionsPerSplit = 32;  // 8 per warp: the least work worth a split of its own

struct AttentionArgs {
  const float* q;
  float* out;
  float* partials;    // DeviceBuffers::attention_partials: [rows, heads, splits, head_dim + 2]
  int32_t* arrivals;  // DeviceBuffers::attention_arrivals: [rows, heads]
  SequencedKv cache;
  RowForm form;
  int32_t splits;
};

// A partial result as stored for Combine: max, sum, then head_dim value sums.
__device__ float* PartialAt(const AttentionArgs& a, int32_t r, int32_t h, int32_t split) {
  const OpParams& p = a.cache.first.params;
  return a.partials +
         ((static_cast<int64_t>(r) * p.n_heads + h) * a.splits + split) * (p.head_dim + 2);
}

// The query in shared memory: as it is, and rotated to its position inside the cache for the
// sinks (StreamingLLM; ref::RotateQuery), both in the Hadamard basis for q8 caches.
__device__ void LoadQuery(const float* qh, const OpParams& p, const AttendedSpans& span,
                          int64_t position, float* q, float* q_sink) {
  const int32_t hd = p.head_dim;
  for (int32_t d = threadIdx.x; d < hd; d += blockDim.x) q[d] = qh[d];
  if (span.sink_end > 0) {
    for (int32_t i = threadIdx.x; i < hd / 2; i += blockDim.x) {
      RotateQueryPair(qh, i, hd, span.cache_position - position, p.rope_base, q_sink);
    }
  }
  __syncthreads();
  if (p.kv_quant == KvQuant::kQ8) {
    Hadamard<false>(q, hd);
    if (span.sink_end > 0) Hadamard<false>(q_sink, hd);
  }
}

// Merges the partials (max, sum, acc) of `count` sources into lane-owned dims of the result.
struct Folded {
  SoftmaxPartial s;
  float acc[kMaxDimsPerLane];
};

__device__ void Fold(Folded* f, SoftmaxPartial b, const float* b_acc, int32_t hd, int lane) {
  float fa = 0.0f, fb = 0.0f;
  MergeSoftmax(&f->s, b, &fa, &fb);
  for (int j = 0; j < kMaxDimsPerLane; ++j) {
    const int32_t d = lane + 32 * j;
    if (d < hd) f->acc[j] = f->acc[j] * fa + b_acc[d] * fb;
  }
}

// out = acc / sum for head h of row r (rotated back from the Hadamard basis for q8).
__device__ void WriteOutput(const Folded& f, float* o, int32_t hd, bool hadamard, float* buffer) {
  const int lane = threadIdx.x % 32;
  for (int j = 0; j < kMaxDimsPerLane; ++j) {
    const int32_t d = lane + 32 * j;
    if (d < hd && threadIdx.x < 32) buffer[d] = f.acc[j] / f.s.sum;
  }
  __syncthreads();
  if (hadamard) Hadamard<false>(buffer, hd);
  for (int32_t d = threadIdx.x; d < hd; d += blockDim.x) o[d] = buffer[d];
}

// Whether this block is the last of the (row, head)'s splits to have written its partial; the
// last one sets the count back to 0 for the next op. The fences make every block's partial
// visible before its arrival is counted, and the others' visible to the last one.
__device__ bool IsLastToArrive(const AttentionArgs& a, int32_t r, int32_t h) {
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    int32_t* count = a.arrivals + static_cast<int64_t>(r) * a.cache.first.params.n_heads + h;
    last = atomicAdd(count, 1) == a.splits - 1;
    if (last) *count = 0;
  }
  __syncthreads();
  if (last) __threadfence();
  return last;
}

// Merges the splits' partials of (row r, head h) into o, by one block. Not a chain of
// MergeSoftmax (each merge waiting on the last): the largest max M first, then each split's
// weight exp(max - M) (0 for a split that attended nothing), then every dim's weighted sum in a
// thread of its own, so that all the partials' loads are in flight at once. The partials are
// read past L1 (__ldcg): other blocks wrote them.
__device__ void Combine(const AttentionArgs& a, int32_t r, int32_t h, float* o, float* buffer) {
  __shared__ float weight[kMaxSplits];
  const OpParams& p = a.cache.first.params;
  const int32_t hd = p.head_dim;
  float m = -INFINITY;
  for (int32_t s = threadIdx.x; s < a.splits; s += blockDim.x) {
    const float* part = PartialAt(a, r, h, s);
    if (__ldcg(part + 1) != 0.0f) m = fmaxf(m, __ldcg(part));
  }
  m = BlockMax(m);
  for (int32_t s = threadIdx.x; s < a.splits; s += blockDim.x) {
    const float* part = PartialAt(a, r, h, s);
    weight[s] = __ldcg(part + 1) != 0.0f ? expf(__ldcg(part) - m) : 0.0f;
  }
  __syncthreads();
  float sum = 0.0f;
  for (int32_t s = 0; s < a.splits; ++s) sum += weight[s] * __ldcg(PartialAt(a, r, h, s) + 1);
  __syncthreads();  // every split's weight is in shared memory
  for (int32_t d = threadIdx.x; d < hd; d += blockDim.x) {
    float acc = 0.0f;
    for (int32_t s = 0; s < a.splits; ++s) acc += weight[s] * __ldcg(PartialAt(a, r, h, s) + 2 + d);
    buffer[d] = acc / sum;
  }
  __syncthreads();
  if (p.kv_quant == KvQuant::kQ8) Hadamard<false>(buffer, hd);
  for (int32_t d = threadIdx.x; d < hd; d += blockDim.x) o[d] = buffer[d];
}

__global__ void AttentionKernel(AttentionArgs a, const StepValues* step) {
  __shared__ float q[256], q_sink[256], warp_acc[kWarps][256];
  __shared__ SoftmaxPartial warp_s[kWarps];
  StartAfterPreviousKernels();
  const int32_t split = blockIdx.x, h = blockIdx.y, r = blockIdx.z;
  if (r >= StepRows(step, a.form)) return;
  const int64_t position = RowPosition(step, a.form, r);
  const int64_t step_end = a.form.batched ? position + 1 : step->position + step->n_tokens;
  const KvView c = a.cache.Of(RowSequence(step, a.form, r));
  const OpParams& p = c.params;
  const int32_t hd = p.head_dim, g = h / (p.n_heads / p.n_kv_heads);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const AttendedSpans span = Attended(p, position);
  LoadQuery(a.q + (static_cast<int64_t>(r) * p.n_heads + h) * hd, p, span, position, q, q_sink);
  const int64_t count = AttendedCount(span);
  const int64_t chunk = (count + a.splits - 1) / a.splits;
  const int64_t n_end = min(count, (split + 1) * chunk);
  Folded f{{-INFINITY, 0.0f}, {}};
  for (int64_t n = split * chunk + warp; n < n_end; n += kWarps) {
    const int64_t t = AttendedPosition(span, n);
    const float* qn = n < span.sink_end ? q_sink : q;
    float dot = 0.0f;
    for (int32_t d = lane; d < hd; d += 32) dot += qn[d] * KvLoadKey(c, step_end, t, g, d);
    float fa = 0.0f, fb = 0.0f;
    MergeSoftmax(&f.s, {WarpSum(dot) * p.scale, 1.0f}, &fa, &fb);
    for (int j = 0; j < kMaxDimsPerLane; ++j) {
      const int32_t d = lane + 32 * j;
      if (d < hd) f.acc[j] = f.acc[j] * fa + KvLoadValue(c, step_end, t, g, d) * fb;
    }
  }
  for (int j = 0; j < kMaxDimsPerLane; ++j) {
    if (lane + 32 * j < hd) warp_acc[warp][lane + 32 * j] = f.acc[j];
  }
  if (lane == 0) warp_s[warp] = f.s;
  __syncthreads();
  Folded all{{-INFINITY, 0.0f}, {}};
  for (int w = 0; w < kWarps; ++w) Fold(&all, warp_s[w], warp_acc[w], hd, lane);
  float* o = a.out + (static_cast<int64_t>(r) * p.n_heads + h) * hd;
  if (a.splits == 1) {
    WriteOutput(all, o, hd, p.kv_quant == KvQuant::kQ8, q);
    return;
  }
  float* part = PartialAt(a, r, h, split);
  if (threadIdx.x < 32) {
    for (int j = 0; j < kMaxDimsPerLane; ++j) {
      if (lane + 32 * j < hd) part[2 + lane + 32 * j] = all.acc[j];
    }
    if (lane == 0) {
      part[0] = all.s.max;
      part[1] = all.s.sum;
    }
  }
  if (IsLastToArrive(a, r, h)) Combine(a, r, h, o, q);
}

// Positions a query of this op attends to at most.
int64_t MaxAttended(const OpParams& p) {
  return p.cache_policy == CachePolicy::kStatic ? p.cache_slots : p.window;
}

// Splits of a decode step's attention: one per kPositionsPerSplit positions it may attend to,
// at most kMaxSplits.
int32_t DecodeSplits(const OpParams& p) {
  const int64_t wanted = (MaxAttended(p) + kPositionsPerSplit - 1) / kPositionsPerSplit;
  const int64_t splits = wanted < kMaxSplits ? wanted : kMaxSplits;
  return static_cast<int32_t>(splits > 1 ? splits : 1);
}

// Whether `op` is a kAttention that runs here (not in the prefill kernel).
bool IsDecodeAttention(const Plan& plan, const Op& op) {
  if (op.kind != OpKind::kAttention) return false;
  const RowForm form = RowFormOf(plan, op);
  return form.batched || form.max_rows == 1;
}

}  // namespace

cudaError_t EnqueueAttention(const Plan& plan, const Op& op, const DeviceBuffers& buffers,
                             const StepValues* step, cudaStream_t stream) {
  const OpParams& p = op.params;
  // The cache tensors in KvLayout order: inputs 1, 2, then those after the scores (input 3).
  uint32_t tensors[6] = {op.inputs[1], op.inputs[2], 0, 0, 0, 0};
  for (int i = 2; i < GetKvLayout(p.kv_quant).count; ++i) tensors[i] = op.inputs[2 + i];
  AttentionArgs a{TensorAt<const float>(plan, buffers, op.inputs[0]),
                  TensorAt<float>(plan, buffers, op.outputs[0]),
                  buffers.attention_partials,
                  buffers.attention_arrivals,
                  CacheOf(plan, op, buffers, tensors),
                  RowFormOf(plan, op),
                  1};
  if (!IsDecodeAttention(plan, op)) {  // a prefill chunk: the tiled kernel
    return LaunchPrefillAttention(a.q, a.out, a.cache, a.form, step, buffers.programmatic_launch,
                                  stream);
  }
  a.splits = DecodeSplits(p);
  if (a.splits > 1 && (a.partials == nullptr || a.arrivals == nullptr)) {
    return cudaErrorInvalidValue;  // sized at init
  }
  const dim3 grid(static_cast<unsigned>(a.splits), static_cast<unsigned>(p.n_heads),
                  static_cast<unsigned>(a.form.max_rows));
  return Launch(buffers.programmatic_launch, AttentionKernel, grid, dim3(32 * kWarps), 0, stream, a,
                step);
}

uint64_t AttentionPartialBytes(const Plan& plan, const Op& op) {
  if (!IsDecodeAttention(plan, op)) return 0;
  const OpParams& p = op.params;
  const int64_t splits = DecodeSplits(p);
  if (splits == 1) return 0;
  const int64_t rows = RowFormOf(plan, op).max_rows;
  return static_cast<uint64_t>(rows * p.n_heads * splits * (p.head_dim + 2)) * sizeof(float);
}

uint64_t AttentionArrivalBytes(const Plan& plan, const Op& op) {
  if (AttentionPartialBytes(plan, op) == 0) return 0;
  return static_cast<uint64_t>(RowFormOf(plan, op).max_rows) * op.params.n_heads * sizeof(int32_t);
}

cudaError_t PreloadAttentionKernels() {
  return PreloadAll(AttentionKernel);
}

}  // namespace staticlm::cuda
