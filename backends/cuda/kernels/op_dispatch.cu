// EnqueueOp and OpSupported: the switch from a plan op to its kernel launch.
// (The kernels themselves are being written; until then every op is reported unsupported, so
// the backend fails Prepare with a clear message instead of running anything.)
#include "backends/cuda/cuda_ops.h"

namespace staticlm::cuda {

bool OpSupported(const Plan& plan, const Op& op, const char** why) {
  (void)plan, (void)op;
  *why = "CUDA: this build has no kernels yet";
  return false;
}

cudaError_t EnqueueOp(const Plan& plan, const Op& op, const DeviceBuffers& buffers,
                      const StepValues* step, cudaStream_t stream) {
  (void)plan, (void)op, (void)buffers, (void)step, (void)stream;
  return cudaErrorNotSupported;
}

cudaError_t EnqueueSample(const float* logits, int32_t vocab, const SampleValues* values,
                          SampleResult* result, cudaStream_t stream) {
  (void)logits, (void)vocab, (void)values, (void)result, (void)stream;
  return cudaErrorNotSupported;
}

}  // namespace staticlm::cuda
