// kEmbed (every table type, decoded element by element) and kRmsNorm (whole rows or per head).
#include "backends/cuda/kernels/block_decode.h"
#include "backends/cuda/kernels/common.cuh"

namespace staticlm::cuda {
namespace {

// Block per row; threads over the width.
__global__ void EmbedKernel(DType type, const uint8_t* table, uint64_t row_bytes, int32_t width,
                            const int32_t* tokens, float* out, float scale, RowForm form,
                            const StepValues* step) {
  StartAfterPreviousKernels();
  const int32_t r = blockIdx.x;
  if (r >= StepRows(step, form)) return;
  const uint8_t* row = table + static_cast<uint64_t>(tokens[r]) * row_bytes;
  for (int32_t i = threadIdx.x; i < width; i += blockDim.x) {
    float v = DecodeElement(type, row, i);
    out[static_cast<int64_t>(r) * width + i] = scale != 1.0f ? v * scale : v;
  }
}

// Block per (row, group): y = x / sqrt(mean(x²) + eps) · weight, as ref::RmsNorm.
__global__ void RmsNormKernel(const float* x, const float* weight, float* y, int32_t groups,
                              int32_t n, float eps, RowForm form, const StepValues* step) {
  StartAfterPreviousKernels();
  if (static_cast<int32_t>(blockIdx.x / groups) >= StepRows(step, form)) return;
  const float* xr = x + static_cast<int64_t>(blockIdx.x) * n;
  float sum_squares = 0.0f;
  for (int32_t i = threadIdx.x; i < n; i += blockDim.x) sum_squares += xr[i] * xr[i];
  sum_squares = BlockSum(sum_squares);
  const float inv_rms = 1.0f / sqrtf(sum_squares / static_cast<float>(n) + eps);
  float* yr = y + static_cast<int64_t>(blockIdx.x) * n;
  for (int32_t i = threadIdx.x; i < n; i += blockDim.x) yr[i] = xr[i] * inv_rms * weight[i];
}

// RMSNorm of rows of x (groups of n per row, each normalised alone) into y.
cudaError_t LaunchRmsNorm(const float* x, const float* weight, float* y, int32_t groups, int32_t n,
                          float eps, RowForm rows, const StepValues* step, bool programmatic,
                          cudaStream_t stream) {
  const unsigned threads = n >= 256 ? 256 : 64;
  return Launch(programmatic, RmsNormKernel, dim3(static_cast<unsigned>(rows.max_rows * groups)),
                dim3(threads), 0, stream, x, weight, y, groups, n, eps, rows, step);
}

}  // namespace

cudaError_t EnqueueEmbed(const Plan& plan, const Op& op, const DeviceBuffers& buffers,
                         const StepValues* step, cudaStream_t stream) {
  const TensorRegion& table = plan.tensors[op.inputs[0]];
  const RowForm form = RowFormOf(plan, op);
  const int32_t width = static_cast<int32_t>(plan.tensors[op.outputs[0]].shape[1]);
  return Launch(buffers.programmatic_launch, EmbedKernel,
                dim3(static_cast<unsigned>(form.max_rows)), dim3(256), 0, stream, table.dtype,
                TensorAt<const uint8_t>(plan, buffers, op.inputs[0]),
                DTypeBytes(table.dtype, static_cast<uint64_t>(width)), width,
                TensorAt<const int32_t>(plan, buffers, op.inputs[1]),
                TensorAt<float>(plan, buffers, op.outputs[0]), op.params.embed_scale, form, step);
}

cudaError_t EnqueueRmsNorm(const Plan& plan, const Op& op, const DeviceBuffers& buffers,
                           const StepValues* step, cudaStream_t stream) {
  const int32_t width = static_cast<int32_t>(plan.tensors[op.outputs[0]].shape[1]);
  const int32_t n = op.params.norm_group > 0 ? op.params.norm_group : width;
  return LaunchRmsNorm(TensorAt<const float>(plan, buffers, op.inputs[0]),
                       TensorAt<const float>(plan, buffers, op.inputs[1]),
                       TensorAt<float>(plan, buffers, op.outputs[0]), width / n, n, op.params.eps,
                       RowFormOf(plan, op), step, buffers.programmatic_launch, stream);
}

cudaError_t PreloadEmbedNormKernels() {
  return PreloadAll(EmbedKernel, RmsNormKernel);
}

}  // namespace staticlm::cuda
