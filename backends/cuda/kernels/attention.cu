// kAttention of decode steps (one row, or rows that are sequences; prefill chunks are
// attention_prefill.cu's), every cache policy and type (kv_access.h reads each). A block of 4 warps
// per (split, query head, row): the row's attended positions (the sinks, then the recent span) are
// cut into `splits` equal parts; in its part each warp takes every 4th position, a lane per 32nd
// dim, scoring with a warp sum and folding the value into an online softmax (MergeSoftmax,
// kernel_math.h). The warps' partials merge in shared memory. With one split the block writes
// the output; with several (flash-decoding over the cache length) it writes its partial into
// the backend's attention_partials, and the last block of the (row, head) to finish (a count in
// attention_arrivals) merges them: no second launch; the splits past the attended positions
// (at depth 0 all but the first) return at once, and where only the first attended anything it
// writes the output itself. A split per 16 positions the op may attend to, up to 64, as many of
// them used as the attended positions fill at one per warp: a warp's positions are a chain of
// dependent loads (key, score, value), so the most splits, each with the fewest positions,
// finish first. Measured on an H100 (bench/results/2026-11-26b-h100-cuda.md): using only one
// split per 32 positions attended so far (fewer, longer chains, a merge of fewer partials) made
// SmolLM2's decode 16 % slower at depth 0 and 10 % at 1,024; on an H200
// (bench/results/2026-11-27-h200-cuda.md), a split per 16 positions instead of 32 (Gemma 3's
// sliding layers, a window of 512: 32 splits instead of 16) made Gemma 3's decode at depth
// 1,024 11 % faster with the row hoisting below, 26 % without. A plain cache's row is worked
// out once per position rather than once per element: a sliding or sink cache's slot takes a
// 64-bit remainder (Gemma 3 at depth 1,024: +14 % alone).
#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/kernel_math.h"
#include "backends/cuda/kernels/kv_access.h"

namespace staticlm::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kMaxDimsPerLane = 8;  // head_dim ≤ 256 (plan validation)
constexpr int kMaxSplits = 64;
constexpr int kPositionsPerSplit = 16;  // 4 per warp

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
__device__ void LoadQuery(const float* qh, const OpParams& p, const float* rope_factors,
                          const AttendedSpans& span, int64_t position, float* q, float* q_sink) {
  const int32_t hd = p.head_dim;
  for (int32_t d = threadIdx.x; d < hd; d += blockDim.x) q[d] = qh[d];
  if (span.sink_end > 0) {
    for (int32_t i = threadIdx.x; i < hd / 2; i += blockDim.x) {
      RotateQueryPair(qh, i, p, span.cache_position - position, rope_factors, q_sink);
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

// Whether this block is the last of the (row, head)'s `used` splits to have written its
// partial; the last one sets the count back to 0 for the next op. The fences make every block's
// partial visible before its arrival is counted, and the others' visible to the last one.
__device__ bool IsLastToArrive(const AttentionArgs& a, int32_t r, int32_t h, int32_t used) {
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    int32_t* count = a.arrivals + static_cast<int64_t>(r) * a.cache.first.params.n_heads + h;
    last = atomicAdd(count, 1) == used - 1;
    if (last) *count = 0;
  }
  __syncthreads();
  if (last) __threadfence();
  return last;
}

// Merges the partials of the (row r, head h)'s first `used` splits (the others attended
// nothing) into o, by one block. Not a chain of MergeSoftmax (each merge waiting on the last):
// each split's max and sum in a thread of its own (one round of loads), the largest max M and
// the weights exp(max - M) (0 for a split that attended nothing) from block reductions, then
// every dim's weighted sum in a thread of its own, its loads unrolled so that many are in
// flight at once. The partials are read past L1 (__ldcg): other blocks wrote them.
__device__ void Combine(const AttentionArgs& a, int32_t r, int32_t h, int32_t used, float* o,
                        float* buffer) {
  static_assert(kMaxSplits <= 32 * kWarps, "a thread per split");
  __shared__ float weight[kMaxSplits];
  const OpParams& p = a.cache.first.params;
  const int32_t hd = p.head_dim;
  const int32_t s = threadIdx.x;
  float max = -INFINITY, sum = 0.0f;
  if (s < used) {
    max = __ldcg(PartialAt(a, r, h, s));
    sum = __ldcg(PartialAt(a, r, h, s) + 1);
  }
  const float m = BlockMax(sum != 0.0f ? max : -INFINITY);
  const float w = sum != 0.0f ? expf(max - m) : 0.0f;
  if (s < used) weight[s] = w;
  const float total = BlockSum(w * sum);  // its barriers also publish weight[]
  for (int32_t d = threadIdx.x; d < hd; d += blockDim.x) {
    float acc = 0.0f;
#pragma unroll 16
    for (int32_t k = 0; k < used; ++k) acc += weight[k] * __ldcg(PartialAt(a, r, h, k) + 2 + d);
    buffer[d] = acc / total;
  }
  __syncthreads();
  if (p.kv_quant == KvQuant::kQ8) Hadamard<false>(buffer, hd);
  for (int32_t d = threadIdx.x; d < hd; d += blockDim.x) o[d] = buffer[d];
}

// How a (row, head)'s attended positions are shared out: `chunk` to a split, at least one per
// warp, and the first `used` splits get any (at depth 0 only the first; a split past them has
// nothing to do). The floor of a position per warp: measured on an H200 with chunks of at least
// 1, 4, 8 and 16 positions (bench/results/2026-11-27-h200-cuda.md), 4 decoded SmolLM2 4 % faster
// from depth 0 than 1 (fewer partials to merge; no warp waits on more than one position), while
// 8 and 16 were slower than 1 (longer chains per warp); at depth 1,024 (chunks of 16) all equal.
struct SplitShare {
  int64_t count;
  int64_t chunk;
  int32_t used;
};

__device__ SplitShare ShareOf(int64_t count, int32_t splits) {
  int64_t chunk = (count + splits - 1) / splits;
  if (chunk < kWarps) chunk = kWarps;
  const int64_t used = chunk > 0 && count > chunk ? (count + chunk - 1) / chunk : 1;
  return {count, chunk, static_cast<int32_t>(used)};
}

// Everything up to the wait (the row's position, span and share of splits) needs only the
// step's values and the op's constants: worked out while the previous kernel runs.
__global__ void AttentionKernel(AttentionArgs a, const StepValues* step) {
  __shared__ float q[256], q_sink[256], warp_acc[kWarps][256];
  __shared__ SoftmaxPartial warp_s[kWarps];
  const int32_t split = blockIdx.x, h = blockIdx.y, r = blockIdx.z;
  if (r >= StepRows(step, a.form)) {
    StartAfterPreviousKernels();
    return;
  }
  const int64_t position = RowPosition(step, a.form, r);
  const int64_t step_end = a.form.batched ? position + 1 : step->position + step->n_tokens;
  const KvView c = a.cache.Of(RowSequence(step, a.form, r));
  const OpParams& p = c.params;
  const int32_t hd = p.head_dim, g = h / (p.n_heads / p.n_kv_heads);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const AttendedSpans span = Attended(p, position);
  const SplitShare share = ShareOf(AttendedCount(span), a.splits);
  StartAfterPreviousKernels();
  if (split >= share.used) return;  // a part past the attended positions: nothing to merge
  LoadQuery(a.q + (static_cast<int64_t>(r) * p.n_heads + h) * hd, p, a.cache.first.rope_factors,
            span, position, q, q_sink);
  const int64_t n_end = min(share.count, (split + 1) * share.chunk);
  Folded f{{-INFINITY, 0.0f}, {}};
  // A plain (f16/f32) cache's row of position t is worked out once per position, not per
  // element: its slot may take a 64-bit remainder (sliding and sink caches).
  const bool plain = p.kv_quant == KvQuant::kNone;
  for (int64_t n = split * share.chunk + warp; n < n_end; n += kWarps) {
    const int64_t t = AttendedPosition(span, n);
    const float* qn = n < span.sink_end ? q_sink : q;
    const int64_t row = plain ? (g * p.cache_slots + KvSlot(p, t)) * hd : 0;
    float dot = 0.0f;
    for (int32_t d = lane; d < hd; d += 32) {
      dot += qn[d] * (plain ? KvPlain(c.type, c.k, row + d) : KvLoadKey(c, step_end, t, g, d));
    }
    float fa = 0.0f, fb = 0.0f;
    MergeSoftmax(&f.s, {WarpSum(dot) * p.scale, 1.0f}, &fa, &fb);
    for (int j = 0; j < kMaxDimsPerLane; ++j) {
      const int32_t d = lane + 32 * j;
      if (d < hd) {
        const float v = plain ? KvPlain(c.type, c.v, row + d) : KvLoadValue(c, step_end, t, g, d);
        f.acc[j] = f.acc[j] * fa + v * fb;
      }
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
  if (share.used == 1) {  // one split attended everything: no partials to merge
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
  if (IsLastToArrive(a, r, h, share.used)) Combine(a, r, h, share.used, o, q);
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
