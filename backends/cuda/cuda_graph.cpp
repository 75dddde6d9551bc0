#include "backends/cuda/cuda_graph.h"

namespace staticlm::cuda {

Status CheckPlanSupported(const Plan& plan) {
  for (const Op& op : plan.ops) {
    const char* why = "CUDA: no kernel for this op";
    if (!OpSupported(plan, op, &why)) return Status::Error(StatusCode::kUnsupported, "%s", why);
  }
  return Status::Ok();
}

Status EnqueuePlan(const Plan& plan, const DeviceBuffers& buffers, const StepValues* step,
                   cudaStream_t stream, EnqueueFn enqueue, const cudaEvent_t* events) {
  if (events != nullptr) {
    const cudaError_t e = cudaEventRecordWithFlags(events[0], stream, cudaEventRecordExternal);
    if (e != cudaSuccess) {
      return Status::Error(StatusCode::kInternal, "CUDA: recording the op timer's start failed: %s",
                           cudaGetErrorString(e));
    }
  }
  for (size_t i = 0; i < plan.ops.size(); ++i) {
    const Op& op = plan.ops[i];
    cudaError_t e = enqueue(plan, op, buffers, step, stream);
    if (e == cudaSuccess && events != nullptr) {
      e = cudaEventRecordWithFlags(events[i + 1], stream, cudaEventRecordExternal);
    }
    if (e != cudaSuccess) {
      return Status::Error(StatusCode::kInternal, "CUDA: enqueueing op %zu (%s) failed: %s", i,
                           OpKindName(op.kind), cudaGetErrorString(e));
    }
  }
  return Status::Ok();
}

Status CapturePlanGraph(const Plan& plan, const DeviceBuffers& buffers, const StepValues* step,
                        cudaStream_t stream, const cudaEvent_t* events, cudaGraphExec_t* graph) {
  cudaError_t e = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
  if (e != cudaSuccess) {
    return Status::Error(StatusCode::kInternal, "CUDA: cannot begin graph capture (%s)",
                         cudaGetErrorString(e));
  }
  Status enqueued = EnqueuePlan(plan, buffers, step, stream, &EnqueueOp, events);
  cudaGraph_t captured = nullptr;
  e = cudaStreamEndCapture(stream, &captured);  // ends the capture even after a failed enqueue
  if (enqueued.ok() && e == cudaSuccess) e = cudaGraphInstantiate(graph, captured, 0);
  if (captured != nullptr) (void)cudaGraphDestroy(captured);  // the instance keeps what it needs
  STATICLM_RETURN_IF_ERROR(enqueued);
  if (e != cudaSuccess) {
    *graph = nullptr;
    return Status::Error(StatusCode::kInternal, "CUDA: cannot capture the plan as a graph (%s)",
                         cudaGetErrorString(e));
  }
  return Status::Ok();
}

}  // namespace staticlm::cuda
