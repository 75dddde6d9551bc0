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
// fails with the op's index and kind. With `events` (OpTimer::EventsOf: the plan's ops + 1),
// events[0] is recorded before the first op and events[i + 1] after op i.
Status EnqueuePlan(const Plan& plan, const DeviceBuffers& buffers, const StepValues* step,
                   cudaStream_t stream, EnqueueFn enqueue, const cudaEvent_t* events = nullptr);

// Init only. Captures EnqueuePlan(…, EnqueueOp, events) on `stream` and instantiates it into
// *graph.
Status CapturePlanGraph(const Plan& plan, const DeviceBuffers& buffers, const StepValues* step,
                        cudaStream_t stream, const cudaEvent_t* events, cudaGraphExec_t* graph);

}  // namespace staticlm::cuda
