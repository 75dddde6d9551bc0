// The Vulkan backend: GLSL compute shaders (shaders/, compiled to SPIR-V at build time and
// embedded), everything created at Prepare — device, buffers sized from the plans, every
// pipeline, a descriptor set per dispatch, one command buffer per plan recorded once — and
// each step replayed with its parameters in a small uniform buffer. The KV cache and the
// arena live in device memory; Execute copies the step's token ids in from the host io buffer
// and only the logits back out — or, with BackendOptions::logits_on_request, nothing: the
// caller then fetches a logits row (FetchLogits) or samples on the device (SampleOnDevice,
// vk_sampling.h), which reads back only the token id.
#pragma once

#include <memory>
#include <vector>

#include "backends/backend.h"
#include "backends/vulkan/vk_device.h"
#include "backends/vulkan/vk_dispatch.h"
#include "backends/vulkan/vk_memory.h"
#include "backends/vulkan/vk_pipelines.h"
#include "backends/vulkan/vk_sampling.h"
#include "backends/vulkan/vk_timestamps.h"

namespace staticlm::vulkan {

// Choices tests make; the registry uses the defaults.
struct VulkanTestOptions {
  bool validation = false;      // enable the Khronos validation layer and count its messages
  int force_matmul_style = -1;  // -1: by device; else DispatchOptions::matmul_style
  bool no_host_import = false;  // always upload the weights, as if import were refused
  // 0: the device's largest storage binding; else a smaller one, so that small models'
  // weights are split over several dispatches as a large model's would be.
  uint64_t max_storage_binding = 0;
  bool force_tiled_attention = false;    // DispatchOptions::force_tiled_attention
  uint32_t attention_splits_budget = 0;  // 0: the default; else DispatchOptions' (1: few splits)
};

class VulkanBackend final : public Backend {
 public:
  explicit VulkanBackend(const BackendOptions& options, const VulkanTestOptions& test = {});
  ~VulkanBackend() override;

  const char* name() const override { return "vulkan"; }
  const char* description() const override { return description_; }
  const char* prepare_note() const override { return pipelines_.note(); }
  Status Prepare(const Plan* const* plans, int n_plans, const BufferBinding& buffers) override;
  Status Execute(int plan_index, const StepParams& step) override;
  Status ReadBuffer(BufferId id, uint64_t offset, uint64_t bytes, void* dst) override;
  Status WriteBuffer(BufferId id, uint64_t offset, uint64_t bytes, const void* src) override;
  Status CopyWithinBuffer(BufferId id, uint64_t src_offset, uint64_t dst_offset,
                          uint64_t bytes) override;
  bool logits_stay_on_device() const override { return options_.logits_on_request; }
  Status FetchLogits(int plan_index, int32_t first_row, int32_t n_rows) override;
  // With BackendOptions::profile_ops: each op's device time (vk_timestamps.h).
  const OpProfile* op_profile() const override {
    return timer_.prepared() ? &op_profile_ : nullptr;
  }
  void ResetOpProfile() override { op_profile_.Reset(); }
  int32_t max_device_top_k() const override { return plans_.empty() ? 0 : DeviceSampler::kMaxTopK; }
  Status SampleOnDevice(int plan_index, int32_t row, const DeviceSampling& sampling,
                        int32_t* token) override;

  // For tests and reports.
  VkCounters& counters() { return dc_.counters(); }
  uint64_t validation_messages() const { return dc_.validation_messages(); }
  bool validation_enabled() const { return dc_.validation_enabled(); }
  double last_step_seconds() const { return last_step_seconds_; }
  const char* pipeline_cache_note() const { return pipelines_.note(); }
  bool pipeline_cache_loaded() const { return pipelines_.cache_loaded(); }
  int pipeline_count() const { return pipelines_.count(); }
  int matmul_style() const { return matmul_style_; }
  // Bytes copied from device memory to the host so far: logits (Execute, FetchLogits), token
  // ids (SampleOnDevice), KV cache reads.
  uint64_t bytes_read_back() const { return bytes_read_back_; }
  // The weights buffer uses the host's weight bytes in place (ImportHostBuffer) rather than a copy.
  bool weights_imported() const { return weights_imported_; }

 private:
  // Ok, or the status of the failure that made the device unusable (device_failure_).
  Status Usable() const;
  Status CreateBuffers(const BufferBinding& buffers, uint64_t scratch);
  Status CreateCommandObjects(size_t n_dispatches, int n_plans);
  // The mapped bytes [offset, offset + bytes) of buffer `id`, or nullptr when out of range.
  uint8_t* MappedRange(BufferId id, uint64_t offset, uint64_t bytes) const;

  BackendOptions options_;
  VulkanTestOptions test_;
  DeviceContext dc_;  // declared first: destroyed last
  PipelineSet pipelines_;
  DeviceBuffer buffers_[static_cast<int>(Slot::kCount)];
  DeviceBuffer step_;
  RopeRows rope_rows_;  // what Execute writes into Slot::kRopeRows (vk_step.h)
  DeviceSampler sampling_;
  DispatchTimer timer_;   // prepared only with options_.profile_ops
  OpProfile op_profile_;  // what timer_ collected
  VkCommandPool command_pool_ = VK_NULL_HANDLE;
  VkDescriptorPool descriptor_pool_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  std::vector<VkCommandBuffer> commands_;
  std::vector<uint8_t> ran_;  // per recording: run to its end once (vk_fence_wait.h)
  std::vector<const Plan*> plans_;
  std::vector<std::vector<Dispatch>> dispatches_;
  BufferBinding host_;
  int matmul_style_ = 0;  // see DispatchOptions::matmul_style
  double last_step_seconds_ = 0.0;
  uint64_t bytes_read_back_ = 0;
  char description_[512] = "vulkan (not prepared)";
  bool weights_imported_ = false;
  char weights_note_[160] = "";  // how the weights reached the device, for description_
  // Set (to a static message) when a submit or wait reports VK_ERROR_DEVICE_LOST, or a step's
  // fence does not signal in time. A lost device never comes back and what its memory held is
  // undefined; a timed-out step may still be running and its fence is still pending. So from
  // then on every call that would submit or touch device memory (Execute, FetchLogits,
  // SampleOnDevice, and reads/writes of the KV cache and arena) fails at once with the same
  // status: nothing more is sent to the queue (resubmitting a pending or signalled fence is
  // invalid), and a session save cannot replace the user's good file with undefined bytes.
  // Only destruction remains.
  const char* device_failure_ = nullptr;
};

}  // namespace staticlm::vulkan
