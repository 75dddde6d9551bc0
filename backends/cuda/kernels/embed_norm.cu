// kEmbed (every table type, decoded element by element) and kRmsNorm (whole rows or per head;
// two alike per-head norms in one launch; a norm with the add of its output after it).
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

// One norm op's tensors: rows of `groups` groups of n values, each normalised alone.
struct NormTensor {
  const float* x;
  const float* weight;
  float* y;
  int32_t groups;
};

// Block per (row, group of a, then of b; b.groups 0: only a): y = x / sqrt(mean(x²) + eps) ·
// weight, as ref::RmsNorm. Two alike per-head norms (a layer's q and k) are one launch; with
// `add_into` (whole rows of a only), add_into += y too: the add op after the norm, in its launch.
__global__ void RmsNormKernel(NormTensor a, NormTensor b, float* add_into, int32_t n, float eps,
                              RowForm form, const StepValues* step) {
  StartAfterPreviousKernels();
  const int32_t groups = a.groups + b.groups;
  const int32_t r = static_cast<int32_t>(blockIdx.x) / groups,
                g = static_cast<int32_t>(blockIdx.x) % groups;
  if (r >= StepRows(step, form)) return;
  const NormTensor& t = g < a.groups ? a : b;
  const int64_t at = (static_cast<int64_t>(r) * t.groups + (g < a.groups ? g : g - a.groups)) * n;
  const float* xr = t.x + at;
  float sum_squares = 0.0f;
  for (int32_t i = threadIdx.x; i < n; i += blockDim.x) sum_squares += xr[i] * xr[i];
  sum_squares = BlockSum(sum_squares);
  const float inv_rms = 1.0f / sqrtf(sum_squares / static_cast<float>(n) + eps);
  float* yr = t.y + at;
  for (int32_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float v = xr[i] * inv_rms * t.weight[i];
    yr[i] = v;
    if (add_into != nullptr) add_into[at + i] += v;
  }
}

NormTensor NormTensorOf(const Plan& plan, const Op& op, const DeviceBuffers& buffers, int32_t n) {
  const int32_t width = static_cast<int32_t>(plan.tensors[op.outputs[0]].shape[1]);
  return {TensorAt<const float>(plan, buffers, op.inputs[0]),
          TensorAt<const float>(plan, buffers, op.inputs[1]),
          TensorAt<float>(plan, buffers, op.outputs[0]), width / n};
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
  if (HeadNormJoinsPrevious(plan, op)) return cudaSuccess;  // the previous norm's launch did it
  const int32_t width = static_cast<int32_t>(plan.tensors[op.outputs[0]].shape[1]);
  const int32_t n = op.params.norm_group > 0 ? op.params.norm_group : width;
  const NormTensor a = NormTensorOf(plan, op, buffers, n);
  NormTensor b{nullptr, nullptr, nullptr, 0};
  float* add_into = nullptr;
  const Op* after = Neighbour(plan, op, +1);
  if (after != nullptr && HeadNormJoinsPrevious(plan, *after)) {
    b = NormTensorOf(plan, *after, buffers, n);
  } else if (after != nullptr && AddJoinsPreviousNorm(plan, *after)) {
    add_into = TensorAt<float>(plan, buffers, after->outputs[0]);
  }
  const RowForm rows = RowFormOf(plan, op);
  const unsigned threads = n >= 256 ? 256 : 64;
  return Launch(buffers.programmatic_launch, RmsNormKernel,
                dim3(static_cast<unsigned>(rows.max_rows * (a.groups + b.groups))), dim3(threads),
                0, stream, a, b, add_into, n, op.params.eps, rows, step);
}

cudaError_t PreloadEmbedNormKernels() {
  return PreloadAll(EmbedKernel, RmsNormKernel);
}

}  // namespace staticlm::cuda
