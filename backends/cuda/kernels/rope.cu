// kRope: one thread per (row, pair i), rotating that pair in every head (pairs adjacent or
// halves, frequency factors, rope_scale), angles as ref::RopeScaled (kernel_math.h).
#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/kernel_math.h"

namespace staticlm::cuda {
namespace {

__global__ void RopeKernel(float* x, int32_t heads, int32_t head_dim, float base,
                           const float* factors, float scale, bool halves, RowForm form,
                           const StepValues* step) {
  const int32_t half = head_dim / 2;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int32_t r = static_cast<int32_t>(t / half), i = static_cast<int32_t>(t % half);
  if (r >= StepRows(step, form)) return;
  float c = 0.0f, s = 0.0f;
  RopeCosSin(static_cast<double>(RowPosition(step, form, r)), i, head_dim, base,
             factors != nullptr ? factors[i] : 1.0f, scale, &c, &s);
  const int32_t first = halves ? i : 2 * i, partner = halves ? half : 1;
  for (int32_t h = 0; h < heads; ++h) {
    float* head = x + (static_cast<int64_t>(r) * heads + h) * head_dim;
    const float x0 = head[first], x1 = head[first + partner];
    head[first] = x0 * c - x1 * s;
    head[first + partner] = x0 * s + x1 * c;
  }
}

}  // namespace

cudaError_t EnqueueRope(const Plan& plan, const Op& op, const DeviceBuffers& buffers,
                        const StepValues* step, cudaStream_t stream) {
  const OpParams& p = op.params;
  const RowForm form = RowFormOf(plan, op);
  const int64_t width = plan.tensors[op.outputs[0]].shape[1];
  const float* factors =
      op.n_inputs == 1 ? TensorAt<const float>(plan, buffers, op.inputs[0]) : nullptr;
  RopeKernel<<<Blocks(int64_t{form.max_rows} * (p.head_dim / 2), 128), 128, 0, stream>>>(
      TensorAt<float>(plan, buffers, op.outputs[0]), static_cast<int32_t>(width / p.head_dim),
      p.head_dim, p.rope_base, factors, p.rope_scale, p.rope_halves, form, step);
  return cudaPeekAtLastError();
}

cudaError_t PreloadRopeKernels() {
  return PreloadAll(RopeKernel);
}

}  // namespace staticlm::cuda
