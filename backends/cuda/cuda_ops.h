// The seam between the CUDA backend's host side (backends/cuda/*.cpp: device choice, memory,
// graph capture and replay, steps) and its kernels (backends/cuda/kernels/*.cu): one call
// enqueues one plan op on a stream. Nothing model-specific crosses it: the plan is the input.
//
// Built by nvcc (kernels) and by the host C++ compiler (backend), so it includes only the CUDA
// runtime's types and the contract.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "contract/plan.h"

namespace staticlm::cuda {

// What changes from step to step (StepParams), in device memory that the host writes with one
// async copy before each graph launch. Kernels read it there, so a graph captured once at init
// serves every step.
struct StepValues {
  int32_t n_tokens;
  int32_t position;
  int32_t sequence;
  int32_t reserved;  // keeps the arrays 16-byte aligned
  int32_t row_sequences[kMaxBatch];
  int32_t row_positions[kMaxBatch];
};

// Device addresses of the plan's four buffers (BufferId order); a tensor is at
// base[region.buffer] + region.offset. Then the backend's own scratch: decode attention's split
// partials (AttentionPartialBytes of the op that needs most; null when none needs any), which
// the ops use one after another on the stream.
//
// programmatic_launch: kernels are launched with programmatic dependent launch (Hopper, sm 90+):
// each may start while the one before it finishes, doing what does not depend on it (loading
// its weights) and then waiting for it (griddepcontrol.wait) before touching anything else.
// A decode step is ~250 small kernels, each bound by latency (launch, first loads), not by
// work; overlapping them is what graph replay alone cannot do.
//
// attention_arrivals: per (row, head), how many of a decode attention's split blocks have
// written their partial; the last to arrive merges them all and sets the count back to 0.
// Zero at init (AttentionArrivalBytes of the op that needs most; null when none needs any).
struct DeviceBuffers {
  uint8_t* base[kBufferCount];
  float* attention_partials;
  int32_t* attention_arrivals;
  bool programmatic_launch;
};

// Init only: the bytes of attention_partials that `op` needs: a decode step's kAttention cut
// over the cache length into splits keeps (max, sum, head_dim sums) per split, head and row;
// 0 for any other op.
uint64_t AttentionPartialBytes(const Plan& plan, const Op& op);

// Init only: the bytes of attention_arrivals that `op` needs: a count per row and head of a
// decode step's kAttention cut into splits; 0 for any other op.
uint64_t AttentionArrivalBytes(const Plan& plan, const Op& op);

// Init only: whether EnqueueOp has a kernel for `op` of `plan` (its kind, dtypes and params).
// When not, *why is set to a static message naming what is missing, e.g. "CUDA: no kernel for
// kMatMul with weights of type IQ2_XS".
bool OpSupported(const Plan& plan, const Op& op, const char** why);

// Init (inside stream capture) and run: enqueues `op` of `plan` on `stream`. Grids are sized
// from the plan's static shapes (its maxima); kernels read n_tokens, positions and sequences
// from `step` (device memory) and leave rows past the step's alone, as the CPU kernels do. The
// result matches the plain reference kernels (backends/cpu/reference_kernels.h) within each
// op's tolerance in the shared every-op test. Never allocates, never synchronises; returns the
// launch error (cudaPeekAtLastError), if any.
cudaError_t EnqueueOp(const Plan& plan, const Op& op, const DeviceBuffers& buffers,
                      const StepValues* step, cudaStream_t stream);

// Init only: whether kRope `op` of `plan` (one of plan.ops) is turned by the launch of the rope
// before it, so that EnqueueOp enqueues nothing for it. A rope followed by one of the same
// rotation (rows, positions, frequencies) on a tensor apart from it — a layer's q, then its k —
// is one launch; in a run of such ropes, pairs are taken from the start.
bool RopeJoinsPrevious(const Plan& plan, const Op& op);

// Init and run: whether EnqueueOp enqueues nothing for `op` of `plan` (one of plan.ops) because
// the launch of an op before it does its work (kernels/op_joins.cu): the second rope of a pair
// (RopeJoinsPrevious), the second of two alike per-head norms (a layer's k norm after its q
// norm), an add of the whole-row norm just before it (residual += norm(x)), and the up product
// and gelu_mul of a GeGLU FFN (gate and up in one product launch). Allocates nothing.
bool JoinsPreviousLaunch(const Plan& plan, const Op& op);

// Init only: loads every kernel of this library into the current device's context now. CUDA
// loads kernels lazily by default (at their first launch, allocating host memory in the
// driver then); after this, no step loads one. Returns the first error, if any.
cudaError_t PreloadKernels();

// The largest top_k EnqueueSample takes (DeviceLogits::max_device_top_k).
constexpr int32_t kMaxSampleTopK = 64;

// Per-call token choice parameters (DeviceSampling), in device memory written before the call.
struct SampleValues {
  int32_t row;    // the logits row to choose from
  int32_t top_k;  // 0: greedy; else 1 … kMaxSampleTopK
  float temperature;
  float top_p;     // 1: off
  double uniform;  // the caller's draw in [0, 1)
  float min_p;     // 0: off
  float reserved;  // keeps the size a multiple of the double's alignment
};

// What EnqueueSample leaves in device memory for the host to read back.
struct SampleResult {
  int32_t token;
  int32_t status;  // 0: ok; 1: a NaN or +inf logit; 2: every logit -inf
};

// Device scratch of EnqueueSample: each of kSampleSlices slices of the row keeps its own best
// max(top_k, 1) candidates (in SampleBefore's order) and whether it holds a NaN or +inf or a
// logit above -inf; the final choice is made among those candidates.
constexpr int32_t kSampleSlices = 64;
struct SampleScratch {
  float score[kSampleSlices * kMaxSampleTopK];
  int32_t id[kSampleSlices * kMaxSampleTopK];
  int32_t bad[kSampleSlices];
  int32_t finite[kSampleSlices];
};

// Run phase: enqueues a token choice from row values->row of `logits` (F32 [rows, vocab], device
// memory) with the semantics of DeviceLogits::SampleOnDevice, writing *scratch and *result. Two
// launches: a block per slice of the row finds the slice's candidates, then one block chooses
// among all slices' candidates. Never allocates; returns the launch error, if any.
cudaError_t EnqueueSample(const float* logits, int32_t vocab, const SampleValues* values,
                          SampleScratch* scratch, SampleResult* result, cudaStream_t stream);

}  // namespace staticlm::cuda
