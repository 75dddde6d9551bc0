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

// Rotates `a` and `b` (b.heads 0: only a); a thread per (row, head of a then of b, pair). The
// angle (pow, cos and sin in double: most of this kernel's time) needs only the step's
// positions and the op's constants, so it is worked out before the wait, while the previous
// kernel (the product that wrote q and k) still runs.
// Partial RoPE (rope_dims < head_dim) turns the first rope_dims elements of each head with a
// rope_dims-wide head's pairs and frequencies; the rest are not touched.
__global__ void RopeKernel(RopeTensor a, RopeTensor b, int32_t head_dim, int32_t rope_dims,
                           float base, const float* factors, float scale, bool halves, RowForm form,
                           const StepValues* step) {
  const int32_t half = rope_dims / 2, heads = a.heads + b.heads;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int32_t i = static_cast<int32_t>(t % half);
  const int32_t h = static_cast<int32_t>(t / half % heads),
                r = static_cast<int32_t>(t / half / heads);
  const bool turns = r < StepRows(step, form);
  float c = 0.0f, s = 0.0f;
  if (turns) {
    RopeCosSin(static_cast<double>(RowPosition(step, form, r)), i, rope_dims, base,
               factors != nullptr ? factors[i] : 1.0f, scale, &c, &s);
  }
  StartAfterPreviousKernels();
  if (!turns) return;
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

RopeTensor TensorOf(const Plan& plan, const Op& op, const DeviceBuffers& buffers) {
  const int64_t width = plan.tensors[op.outputs[0]].shape[1];
  return {TensorAt<float>(plan, buffers, op.outputs[0]),
          static_cast<int32_t>(width / op.params.head_dim)};
}

}  // namespace

cudaError_t EnqueueRope(const Plan& plan, const Op& op, const DeviceBuffers& buffers,
                        const StepValues* step, cudaStream_t stream) {
  if (RopeJoinsPrevious(plan, op)) return cudaSuccess;  // the previous op's launch turned it
  const OpParams& p = op.params;
  const RowForm form = RowFormOf(plan, op);
  const Op* after = Neighbour(plan, op, +1);
  RopeTensor b{nullptr, 0};
  if (after != nullptr && RopeJoinsPrevious(plan, *after)) b = TensorOf(plan, *after, buffers);
  const RopeTensor a = TensorOf(plan, op, buffers);
  const int32_t rope_dims = static_cast<int32_t>(RopeDimsOf(p));
  const int64_t threads = int64_t{form.max_rows} * (a.heads + b.heads) * (rope_dims / 2);
  return Launch(buffers.programmatic_launch, RopeKernel, dim3(Blocks(threads, 128)), dim3(128), 0,
                stream, a, b, p.head_dim, rope_dims, p.rope_base, Factors(plan, op, buffers),
                p.rope_scale, p.rope_halves, form, step);
}

cudaError_t PreloadRopeKernels() {
  return PreloadAll(RopeKernel);
}

}  // namespace staticlm::cuda
