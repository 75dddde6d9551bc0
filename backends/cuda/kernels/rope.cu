// kRope: one thread per (row, head, pair i), rotating that pair (pairs adjacent or halves,
// frequency factors, rope_scale), angles as ref::RopeScaled (kernel_math.h). A thread per head
// rather than a loop over heads: the loop's loads wait on its stores (they may alias), one
// round trip per head. A rope op followed by another of the same rotation on another tensor (a
// layer's q, then its k) is one launch over both tensors' heads; the second op then enqueues
// nothing.
#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/kernel_math.h"

namespace staticlm::cuda {
namespace {

struct RopeTensor {
  float* x;
  int32_t heads;
};

// Rotates `a` and `b` (b.heads 0: only a); a thread per (row, head of a then of b, pair).
__global__ void RopeKernel(RopeTensor a, RopeTensor b, int32_t head_dim, float base,
                           const float* factors, float scale, bool halves, RowForm form,
                           const StepValues* step) {
  StartAfterPreviousKernels();
  const int32_t half = head_dim / 2, heads = a.heads + b.heads;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int32_t i = static_cast<int32_t>(t % half);
  const int32_t h = static_cast<int32_t>(t / half % heads),
                r = static_cast<int32_t>(t / half / heads);
  if (r >= StepRows(step, form)) return;
  float c = 0.0f, s = 0.0f;
  RopeCosSin(static_cast<double>(RowPosition(step, form, r)), i, head_dim, base,
             factors != nullptr ? factors[i] : 1.0f, scale, &c, &s);
  const RopeTensor& x = h < a.heads ? a : b;
  float* head =
      x.x + (static_cast<int64_t>(r) * x.heads + (h < a.heads ? h : h - a.heads)) * head_dim;
  const int32_t first = halves ? i : 2 * i, partner = halves ? half : 1;
  const float x0 = head[first], x1 = head[first + partner];
  head[first] = x0 * c - x1 * s;
  head[first + partner] = x0 * s + x1 * c;
}

const float* Factors(const Plan& plan, const Op& op, const DeviceBuffers& buffers) {
  return op.n_inputs == 1 ? TensorAt<const float>(plan, buffers, op.inputs[0]) : nullptr;
}

// Whether rope ops a and b turn their rows alike (same rows, positions, frequencies) on
// tensors that do not overlap, so that one launch can do both.
bool SameRotation(const Plan& plan, const Op& a, const Op& b) {
  const OpParams &p = a.params, &q = b.params;
  const TensorRegion &ta = plan.tensors[a.outputs[0]], &tb = plan.tensors[b.outputs[0]];
  const bool apart = ta.buffer != tb.buffer || ta.offset + ta.bytes() <= tb.offset ||
                     tb.offset + tb.bytes() <= ta.offset;
  return a.kind == OpKind::kRope && b.kind == OpKind::kRope && apart &&
         ta.shape[0] == tb.shape[0] && p.rows_from_step == q.rows_from_step &&
         p.head_dim == q.head_dim && p.rope_base == q.rope_base && p.rope_scale == q.rope_scale &&
         p.rope_halves == q.rope_halves && a.n_inputs == b.n_inputs &&
         (a.n_inputs == 0 || a.inputs[0] == b.inputs[0]);
}

// The op after / before `op` in its plan (ops are plan.ops' elements), or null.
const Op* Neighbour(const Plan& plan, const Op& op, int direction) {
  const Op* first = plan.ops.data();
  const Op* last = first + plan.ops.size();
  if (&op < first || &op >= last) return nullptr;  // not one of the plan's own ops
  const Op* n = &op + direction;
  return n >= first && n < last ? n : nullptr;
}

RopeTensor TensorOf(const Plan& plan, const Op& op, const DeviceBuffers& buffers) {
  const int64_t width = plan.tensors[op.outputs[0]].shape[1];
  return {TensorAt<float>(plan, buffers, op.outputs[0]),
          static_cast<int32_t>(width / op.params.head_dim)};
}

}  // namespace

bool RopeJoinsPrevious(const Plan& plan, const Op& op) {
  // Pairs are taken from the start of a run of alike ropes: the second of a pair has an odd
  // count of alike ropes before it.
  int alike_before = 0;
  for (const Op* o = &op; Neighbour(plan, *o, -1) != nullptr; o = Neighbour(plan, *o, -1)) {
    if (!SameRotation(plan, *Neighbour(plan, *o, -1), *o)) break;
    ++alike_before;
  }
  return alike_before % 2 == 1;
}

cudaError_t EnqueueRope(const Plan& plan, const Op& op, const DeviceBuffers& buffers,
                        const StepValues* step, cudaStream_t stream) {
  if (RopeJoinsPrevious(plan, op)) return cudaSuccess;  // the previous op's launch turned it
  const OpParams& p = op.params;
  const RowForm form = RowFormOf(plan, op);
  const Op* after = Neighbour(plan, op, +1);
  RopeTensor b{nullptr, 0};
  if (after != nullptr && SameRotation(plan, op, *after)) b = TensorOf(plan, *after, buffers);
  const RopeTensor a = TensorOf(plan, op, buffers);
  const int64_t threads = int64_t{form.max_rows} * (a.heads + b.heads) * (p.head_dim / 2);
  return Launch(buffers.programmatic_launch, RopeKernel, dim3(Blocks(threads, 128)), dim3(128), 0,
                stream, a, b, p.head_dim, p.rope_base, Factors(plan, op, buffers), p.rope_scale,
                p.rope_halves, form, step);
}

cudaError_t PreloadRopeKernels() {
  return PreloadAll(RopeKernel);
}

}  // namespace staticlm::cuda
