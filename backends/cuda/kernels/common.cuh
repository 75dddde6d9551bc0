// Device helpers shared by the kernels (internal to backends/cuda/kernels): where a plan
// tensor is in device memory, how many rows a step has, each row's position and sequence, and
// warp/block reductions.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/cuda_ops.h"

namespace staticlm::cuda {

// The enqueue function of one op family; EnqueueOp (op_dispatch.cu) picks it by kind.
using EnqueueFn = cudaError_t (*)(const Plan& plan, const Op& op, const DeviceBuffers& buffers,
                                  const StepValues* step, cudaStream_t stream);

template <typename T>
inline T* TensorAt(const Plan& plan, const DeviceBuffers& buffers, uint32_t tensor) {
  const TensorRegion& t = plan.tensors[tensor];
  return reinterpret_cast<T*>(buffers.base[static_cast<int>(t.buffer)] + t.offset);
}

// What a kernel needs to know about a step's rows besides the StepValues: the op's static row
// count (its output's dim 0), whether the step decides it, and whether rows are sequences.
struct RowForm {
  int32_t max_rows;
  bool from_step;
  bool batched;  // rows_are_sequences: row r is sequence row_sequences[r] at row_positions[r]
};

inline RowForm RowFormOf(const Plan& plan, const Op& op) {
  return {static_cast<int32_t>(plan.tensors[op.outputs[0]].shape[0]), op.params.rows_from_step,
          plan.limits.rows_are_sequences};
}

__device__ inline int32_t StepRows(const StepValues* s, RowForm f) {
  return f.from_step ? s->n_tokens : f.max_rows;
}

__device__ inline int32_t RowPosition(const StepValues* s, RowForm f, int32_t r) {
  return f.batched ? s->row_positions[r] : s->position + r;
}

__device__ inline int32_t RowSequence(const StepValues* s, RowForm f, int32_t r) {
  return f.batched ? s->row_sequences[r] : s->sequence;
}

__device__ inline float WarpSum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ inline float WarpMax(float v) {
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Σ v over the block (blockDim.x a multiple of 32, ≤ 1024); every thread gets the sum.
__device__ inline float BlockSum(float v) {
  __shared__ float partial[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = WarpSum(v);
  __syncthreads();  // partial may still be read by a previous call
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < warps ? partial[lane] : 0.0f;
  return WarpSum(v);
}

__device__ inline float BlockMax(float v) {
  __shared__ float partial[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = WarpMax(v);
  __syncthreads();
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < warps ? partial[lane] : -INFINITY;
  return WarpMax(v);
}

// Programmatic dependent launch (DeviceBuffers::programmatic_launch). Every kernel calls
// WaitForPreviousKernels before it reads or writes anything a kernel before it may touch, and
// before any early return, so that no kernel completes before the one it follows: a kernel's
// wait covers the whole chain. What may be read before the wait: constant weights, and the
// step's StepValues, which the host copies in stream order before the graph starts (a kernel's
// blocks start only once the kernel two before it has finished, and the first waits for the copy).
// It then calls LetNextKernelStart, so that the next kernel's blocks are scheduled and load their
// weights while this one runs. Both are no-ops below sm 90 and for kernels launched without the
// attribute.
__device__ inline void WaitForPreviousKernels() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ inline void LetNextKernelStart() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Both, for kernels that load nothing before their inputs are ready.
__device__ inline void StartAfterPreviousKernels() {
  WaitForPreviousKernels();
  LetNextKernelStart();
}

// Launches kernel<<<grid, block, shared_bytes, stream>>>(args…), with programmatic dependent
// launch when `programmatic` (DeviceBuffers::programmatic_launch).
template <typename... Params, typename... Args>
inline cudaError_t Launch(bool programmatic, void (*kernel)(Params...), dim3 grid, dim3 block,
                          size_t shared_bytes, cudaStream_t stream, Args... args) {
  cudaLaunchAttribute attribute[1] = {};
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  config.attrs = attribute;
  config.numAttrs = programmatic ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, static_cast<Params>(args)...);
}

inline unsigned Blocks(int64_t work, int64_t per_block) {
  return static_cast<unsigned>((work + per_block - 1) / per_block);
}

// The normalised Walsh-Hadamard transform of x[0 … n) in shared memory, by the whole block
// (kWarp false) or by one warp on a row of its own (kWarp true): the reference's blocks of n's
// binary digits, largest first, and its butterflies (backends/cpu/hadamard.h), each stage's
// pairs in parallel, so the result is bit for bit the reference's.
template <bool kWarp>
__device__ inline void Hadamard(float* x, int n) {
  const int first = kWarp ? threadIdx.x % 32 : threadIdx.x;
  const int stride = kWarp ? 32 : blockDim.x;
  auto sync = [] { kWarp ? __syncwarp() : __syncthreads(); };
  for (int at = 0; at < n;) {
    int block = 1;
    while (block * 2 <= n - at) block *= 2;
    float* row = x + at;
    for (int half = 1; half < block; half *= 2) {
      sync();
      for (int p = first; p < block / 2; p += stride) {
        const int j = p / half * 2 * half + p % half;
        const float a = row[j], b = row[j + half];
        row[j] = a + b;
        row[j + half] = a - b;
      }
    }
    sync();
    const float norm = 1.0f / sqrtf(static_cast<float>(block));
    for (int d = first; d < block; d += stride) row[d] *= norm;
    at += block;
  }
  sync();
}

// The op after (direction +1) or before (−1) `op` in its plan, or null (op_joins.cu).
const Op* Neighbour(const Plan& plan, const Op& op, int direction);
// Joins (op_joins.cu; cuda_ops.h's JoinsPreviousLaunch): whether `op` is the second of two
// alike per-head norms, one launch over both tensors' heads; whether kAdd `op` adds the output
// of the whole-row norm before it, which that norm's launch then adds; the up product of a
// GeGLU FFN whose product `gate` is (the next op; gelu_mul follows it), or null.
bool HeadNormJoinsPrevious(const Plan& plan, const Op& op);
bool AddJoinsPreviousNorm(const Plan& plan, const Op& op);
const Op* GegluUpOf(const Plan& plan, const Op& gate);

// Enqueue functions of each op family (one .cu file each).
cudaError_t EnqueueEmbed(const Plan&, const Op&, const DeviceBuffers&, const StepValues*,
                         cudaStream_t);
cudaError_t EnqueueRmsNorm(const Plan&, const Op&, const DeviceBuffers&, const StepValues*,
                           cudaStream_t);
cudaError_t EnqueueElementwise(const Plan&, const Op&, const DeviceBuffers&, const StepValues*,
                               cudaStream_t);
cudaError_t EnqueueRope(const Plan&, const Op&, const DeviceBuffers&, const StepValues*,
                        cudaStream_t);
cudaError_t EnqueueMatMul(const Plan&, const Op&, const DeviceBuffers&, const StepValues*,
                          cudaStream_t);
cudaError_t EnqueueKvStore(const Plan&, const Op&, const DeviceBuffers&, const StepValues*,
                           cudaStream_t);
cudaError_t EnqueueAttention(const Plan&, const Op&, const DeviceBuffers&, const StepValues*,
                             cudaStream_t);

// Init only: makes the driver load `kernel` now. Under CUDA's lazy loading (the default on
// Linux since CUDA 12.2) a kernel's module is loaded at its first launch, and the driver
// allocates host memory then: the first steps after init would allocate. Querying a kernel's
// attributes loads it.
template <typename Kernel>
inline cudaError_t Preload(Kernel* kernel) {
  cudaFuncAttributes attributes;
  return cudaFuncGetAttributes(&attributes, kernel);
}

template <typename... Kernels>
inline cudaError_t PreloadAll(Kernels*... kernels) {
  cudaError_t e = cudaSuccess;
  ((e = e == cudaSuccess ? Preload(kernels) : e), ...);
  return e;
}

// Init only: Preload of every kernel of each op family (one per .cu file).
cudaError_t PreloadEmbedNormKernels();
cudaError_t PreloadElementwiseKernels();
cudaError_t PreloadRopeKernels();
cudaError_t PreloadMatMulKernels();
cudaError_t PreloadKvStoreKernels();
cudaError_t PreloadAttentionKernels();
cudaError_t PreloadPrefillAttentionKernels();
cudaError_t PreloadSampleKernels();

struct SequencedKv;

// Attention of a prefill chunk (rows of one sequence), tiled: attention_prefill.cu.
cudaError_t LaunchPrefillAttention(const float* q, float* out, const SequencedKv& cache,
                                   RowForm form, const StepValues* step, bool programmatic,
                                   cudaStream_t stream);

// The cache of a kKvStore or kAttention as device addresses; `tensors` are its cache tensors'
// indices in KvLayout order (k, v, [side k, v], [recent k, v]). Defined in kv_store.cu.
SequencedKv CacheOf(const Plan& plan, const Op& op, const DeviceBuffers& buffers,
                    const uint32_t* tensors);

}  // namespace staticlm::cuda
