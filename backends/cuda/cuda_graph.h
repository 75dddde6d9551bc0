// From a plan to device work: the check that every op has a kernel, the walk that enqueues a
// plan's ops on a stream, and its capture, once at Prepare, as a CUDA graph replayed each step.
#pragma once

#include "backends/cuda/cuda_ops.h"
#include "contract/plan.h"
#include "platform/status.h"

namespace staticlm::cuda {

// Init only. kUnsupported with OpSupported's message for the first op without a kernel.
Status CheckPlanSupported(const Plan& plan);

// The enqueue of one op: cuda::EnqueueOp, or a recorder in tests.
using EnqueueFn = cudaError_t (*)(const Plan&, const Op&, const DeviceBuffers&, const StepValues*,
                                  cudaStream_t);

// Init only. Enqueues every op of `plan` in plan order with `enqueue`; the first launch error
// fails with the op's index and kind.
Status EnqueuePlan(const Plan& plan, const DeviceBuffers& buffers, const StepValues* step,
                   cudaStream_t stream, EnqueueFn enqueue);

// Init only. Captures EnqueuePlan(…, EnqueueOp) on `stream` and instantiates it into *graph.
Status CapturePlanGraph(const Plan& plan, const DeviceBuffers& buffers, const StepValues* step,
                        cudaStream_t stream, cudaGraphExec_t* graph);

}  // namespace staticlm::cuda
