// Sampling on the device (issue 5): the token is chosen where the logits are, and only its id
// is read back. Two shaders — shaders/sample_argmax.comp (greedy) and shaders/sample_topk.comp
// (top-k with temperature, then top-p and min-p) — each recorded at init into a small command
// buffer of its own per plan, bound to that plan's logits in the device io buffer and to a
// small host-visible block that carries the call's parameters (row, k, temperature, the host's
// uniform draw, top_p, min_p) in and the token out. A call writes the block, submits, waits
// and reads one int32: it creates, allocates and updates nothing.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/backend.h"
#include "backends/vulkan/vk_api.h"
#include "backends/vulkan/vk_device.h"
#include "backends/vulkan/vk_memory.h"
#include "backends/vulkan/vk_pipelines.h"
#include "contract/plan.h"
#include "platform/status.h"

namespace staticlm::vulkan {

// The backend's buffers the sampling dispatches bind. Borrowed; they must outlive the
// DeviceSampler's recordings.
struct SamplingBuffers {
  const DeviceBuffer* io = nullptr;     // the device io buffer that holds the logits
  const DeviceBuffer* dummy = nullptr;  // bound to the storage bindings the shaders do not use
  const DeviceBuffer* step = nullptr;   // the step's uniform block (the shared layout has one)
};

class DeviceSampler {
 public:
  // The largest top_k (KMAX in shaders/sample_topk.comp); larger k is sampled on the host.
  static constexpr int32_t kMaxTopK = 256;

  DeviceSampler() = default;
  DeviceSampler(const DeviceSampler&) = delete;
  DeviceSampler& operator=(const DeviceSampler&) = delete;
  ~DeviceSampler();

  // Init only: creates the parameter block and a descriptor pool, gets the two pipelines from
  // `pipelines`, and records, for each plan whose logits are an f32 (rows, vocab) tensor in the
  // io buffer, one command buffer per mode, allocated from `pool` (freed with it). Plans with
  // other logits are left out: Sample says kUnsupported for them. `dc` and `pipelines` are
  // borrowed and must outlive this object.
  Status Prepare(DeviceContext* dc, PipelineSet* pipelines, VkCommandPool pool,
                 const SamplingBuffers& buffers, const Plan* const* plans, int n_plans);

  // Run phase: samples row `row` of plan `plan_index`'s logits as they are in the device io
  // buffer (the caller ran that plan last), waiting on `fence` (unsignalled, and left so).
  // Never allocates; bounded work (a few passes over one row). Fails with a static message:
  // kInvalidArgument for a bad row or parameters, or — as Sampler does — for NaN/+inf logits or
  // a row of only −inf; kUnsupported for a plan left out; kInternal when the device fails.
  Status Sample(int plan_index, int32_t row, const DeviceSampling& s, VkFence fence,
                int32_t* token);
  // Null, or the message of the failure a Sample saw that leaves the device unusable (device
  // lost, or a fence that did not signal in time), so the backend can refuse everything after.
  const char* device_failure() const { return device_failure_; }

 private:
  struct PlanLogits {
    uint64_t offset = 0;  // bytes into the io buffer
    int32_t rows = 0;     // 0: left out
    int32_t vocab = 0;
  };
  Status Record(int plan_index, VkPipeline pipeline, VkCommandBuffer cb,
                const SamplingBuffers& buffers);

  DeviceContext* dc_ = nullptr;
  PipelineSet* pipelines_ = nullptr;
  DeviceBuffer block_;  // host-visible: parameters in, token out (sample_keys.glsl)
  VkDescriptorPool pool_ = VK_NULL_HANDLE;
  std::vector<PlanLogits> logits_;
  std::vector<VkCommandBuffer> commands_;  // [plan * 2 + mode], mode 0 greedy, 1 top-k
  std::vector<uint8_t> ran_;               // per command buffer: run once (vk_fence_wait.h)
  const char* device_failure_ = nullptr;
};

}  // namespace staticlm::vulkan
