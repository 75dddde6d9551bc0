// kAdd, kAddBias, kSiluMul, kGeluMul and kTakeLast: one thread per element over the op's
// static maximum, threads of rows past the step's leaving their elements alone.
#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/kernel_math.h"

namespace staticlm::cuda {
namespace {

// a[i] = f(a[i], b[i % b_width]): b is a whole [R, d] tensor (b_width = R·d) or a bias [d].
template <typename F>
__global__ void BinaryKernel(float* a, const float* b, int64_t width, int64_t b_width, F f,
                             RowForm form, const StepValues* step) {
  StartAfterPreviousKernels();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<int64_t>(StepRows(step, form)) * width) return;
  a[i] = f(a[i], b[i % b_width]);
}

__global__ void TakeLastKernel(const float* x, float* y, int64_t width, const StepValues* step) {
  StartAfterPreviousKernels();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < width) y[i] = x[static_cast<int64_t>(step->n_tokens - 1) * width + i];
}

struct AddFn {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct SiluMulFn {
  __device__ float operator()(float gate, float up) const { return SiluMulValue(gate, up); }
};
struct GeluMulFn {
  __device__ float operator()(float gate, float up) const { return GeluMulValue(gate, up); }
};

template <typename F>
cudaError_t LaunchBinary(const Plan& plan, const Op& op, const DeviceBuffers& buffers,
                         const StepValues* step, cudaStream_t stream, bool bias) {
  const RowForm form = RowFormOf(plan, op);
  const int64_t width = plan.tensors[op.outputs[0]].shape[1];
  const int64_t n = form.max_rows * width;
  return Launch(buffers.programmatic_launch, BinaryKernel<F>, dim3(Blocks(n, 256)), dim3(256), 0,
                stream, TensorAt<float>(plan, buffers, op.outputs[0]),
                TensorAt<const float>(plan, buffers, op.inputs[0]), width, bias ? width : n, F{},
                form, step);
}

}  // namespace

cudaError_t EnqueueElementwise(const Plan& plan, const Op& op, const DeviceBuffers& buffers,
                               const StepValues* step, cudaStream_t stream) {
  if (JoinsPreviousLaunch(plan, op)) return cudaSuccess;  // a norm's or a product's launch did it
  switch (op.kind) {
    case OpKind::kAdd:
      return LaunchBinary<AddFn>(plan, op, buffers, step, stream, false);
    case OpKind::kAddBias:
      return LaunchBinary<AddFn>(plan, op, buffers, step, stream, true);
    case OpKind::kSiluMul:
      return LaunchBinary<SiluMulFn>(plan, op, buffers, step, stream, false);
    case OpKind::kGeluMul:
      return LaunchBinary<GeluMulFn>(plan, op, buffers, step, stream, false);
    case OpKind::kTakeLast: {
      const int64_t width = plan.tensors[op.inputs[0]].shape[1];
      return Launch(buffers.programmatic_launch, TakeLastKernel, dim3(Blocks(width, 256)),
                    dim3(256), 0, stream, TensorAt<const float>(plan, buffers, op.inputs[0]),
                    TensorAt<float>(plan, buffers, op.outputs[0]), width, step);
    }
    default:
      return cudaErrorNotSupported;
  }
}

cudaError_t PreloadElementwiseKernels() {
  return PreloadAll(BinaryKernel<AddFn>, BinaryKernel<SiluMulFn>, BinaryKernel<GeluMulFn>,
                    TakeLastKernel);
}

}  // namespace staticlm::cuda
