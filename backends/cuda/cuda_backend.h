// The CUDA backend: everything made at Prepare — the device chosen (BackendOptions::device),
// the plan buffers in device memory sized from the plans (the weights uploaded once), one
// pinned host block for the step values, token ids and logits, a small device block for the
// step values, one stream, and each plan captured once as a CUDA graph (cuda_graph.h). Execute
// writes the step into the pinned block, copies it and the token ids to the device, launches
// the plan's graph and copies the logits back (or, with BackendOptions::logits_on_request,
// leaves them on the device for FetchLogits / SampleOnDevice). Every device and pinned
// allocation is counted (cuda_memory.h); none happens after Prepare.
#pragma once

#include <vector>

#include "backends/backend.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_op_timer.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/cuda_sizing.h"

namespace staticlm::cuda {

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const BackendOptions& options);
  ~CudaBackend() override;

  const char* name() const override { return "cuda"; }
  const char* description() const override { return description_; }
  Status Prepare(const Plan* const* plans, int n_plans, const BufferBinding& buffers) override;
  Status Execute(int plan_index, const StepParams& step) override;
  // Seconds spent waiting for the device (cudaStreamSynchronize) since the last reset.
  double sync_seconds() const override { return sync_seconds_; }
  void ResetSyncSeconds() override { sync_seconds_ = 0.0; }
  Status ReadBuffer(BufferId id, uint64_t offset, uint64_t bytes, void* dst) override;
  Status WriteBuffer(BufferId id, uint64_t offset, uint64_t bytes, const void* src) override;
  Status CopyWithinBuffer(BufferId id, uint64_t src_offset, uint64_t dst_offset,
                          uint64_t bytes) override;
  bool logits_stay_on_device() const override { return options_.logits_on_request; }
  Status FetchLogits(int plan_index, int32_t first_row, int32_t n_rows) override;
  int32_t max_device_top_k() const override { return plans_.empty() ? 0 : kMaxSampleTopK; }
  Status SampleOnDevice(int plan_index, int32_t row, const DeviceSampling& sampling,
                        int32_t* token) override;
  // With BackendOptions::profile_ops: each op's device time (cuda_op_timer.h).
  const OpProfile* op_profile() const override {
    return options_.profile_ops ? &op_profile_ : nullptr;
  }
  void ResetOpProfile() override { op_profile_.Reset(); }

  // For tests and reports. The sizing is computed before anything is allocated, so it is
  // there even when Prepare then failed (e.g. with no device).
  const CudaSizing& sizing() const { return sizing_; }
  const DeviceChoice& device() const { return device_; }
  // The CPU time of the last Execute: from its start to the graph launch returning, without
  // the wait for the device.
  double last_host_seconds() const { return last_host_seconds_; }
  double last_step_seconds() const { return last_step_seconds_; }

 private:
  Status Usable() const;
  const Plan* PlanAt(int plan_index) const;
  Status CreateResources(int n_plans);
  Status CaptureGraphs(int n_plans);  // every plan's graph, replacing any captured before
  Status UploadWeights();
  // Waits for the stream; a failure marks the device unusable (device_failure_).
  Status Synchronize();
  // The device range [offset, offset + bytes) of buffer `id` (not the weights), or nullptr.
  uint8_t* DeviceRange(BufferId id, uint64_t offset, uint64_t bytes) const;

  BackendOptions options_;
  BufferBinding host_;
  std::vector<const Plan*> plans_;
  CudaSizing sizing_;
  DeviceChoice device_;
  DeviceBuffers buffers_{};
  DeviceStepBlock* device_step_ = nullptr;
  uint8_t* pinned_ = nullptr;  // PinnedStepBlock, token ids, logits (sizing_'s offsets)
  cudaStream_t stream_ = nullptr;
  std::vector<cudaGraphExec_t> graphs_;  // one per plan
  OpTimer timer_;                        // prepared only with options_.profile_ops
  OpProfile op_profile_;                 // what timer_ collected
  const char* device_failure_ = nullptr;
  double sync_seconds_ = 0.0;
  double last_host_seconds_ = 0.0;
  double last_step_seconds_ = 0.0;
  char description_[640] = "cuda: not prepared";
};

}  // namespace staticlm::cuda
