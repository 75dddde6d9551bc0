#include "backends/vulkan/vk_sampling.h"

#include <climits>
#include <cmath>
#include <cstddef>
#include <cstring>

#include "backends/vulkan/vk_fence_wait.h"
#include "backends/vulkan/vk_recorder.h"

namespace staticlm::vulkan {
namespace {

constexpr uint64_t kSampleTimeoutNs = 10ull * 1000 * 1000 * 1000;
constexpr int kModes = 2;  // 0 greedy, 1 top-k
const char* const kShaders[kModes] = {"sample_argmax", "sample_topk"};

// The parameter block, word for word (shaders/sample_keys.glsl).
struct SampleBlock {
  uint32_t row = 0;
  uint32_t k = 0;
  float temperature = 0.0f;
  float uniform = 0.0f;
  float top_p = 1.0f;
  float min_p = 0.0f;
  int32_t token = 0;  // written by the shader
};
constexpr int32_t kBadLogits = -1;  // SAMPLE_BAD_LOGITS
constexpr int32_t kAllNegInf = -2;  // SAMPLE_ALL_NEG_INF

}  // namespace

DeviceSampler::~DeviceSampler() {
  if (dc_ == nullptr) return;
  if (pool_ != VK_NULL_HANDLE) vkDestroyDescriptorPool(dc_->device(), pool_, dc_->allocator());
  DestroyDeviceBuffer(*dc_, &block_);
}

Status DeviceSampler::Prepare(DeviceContext* dc, PipelineSet* pipelines, VkCommandPool pool,
                              const SamplingBuffers& buffers, const Plan* const* plans,
                              int n_plans) {
  dc_ = dc;
  pipelines_ = pipelines;
  logits_.assign(static_cast<size_t>(n_plans), PlanLogits{});
  for (int i = 0; i < n_plans; ++i) {
    const TensorRegion& t = plans[i]->tensors[plans[i]->logits_tensor];
    if (t.buffer != BufferId::kIo || t.dtype != DType::kF32 || t.rank != 2 || t.offset % 4 != 0 ||
        t.shape[0] < 1 || t.shape[1] < 1 || t.shape[1] > INT32_MAX || t.shape[0] > INT32_MAX) {
      continue;
    }
    logits_[size_t(i)] = {t.offset, static_cast<int32_t>(t.shape[0]),
                          static_cast<int32_t>(t.shape[1])};
  }
  STATICLM_RETURN_IF_ERROR(CreateDeviceBuffer(*dc, 64, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                                              MemoryUse::kHost, "the sampling parameters",
                                              &block_));
  std::memset(block_.mapped, 0, block_.size);
  const uint32_t sets = static_cast<uint32_t>(n_plans * kModes);
  VkDescriptorPoolSize sizes[2] = {
      {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, sets * static_cast<uint32_t>(kStorageBindings)},
      {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, sets}};
  VkDescriptorPoolCreateInfo dp{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  dp.maxSets = sets;
  dp.poolSizeCount = 2;
  dp.pPoolSizes = sizes;
  dc->counters().object_creations.fetch_add(1);
  if (vkCreateDescriptorPool(dc->device(), &dp, dc->allocator(), &pool_) != VK_SUCCESS) {
    return Status::Error(StatusCode::kOutOfMemory, "cannot create the sampling descriptor pool");
  }
  commands_.assign(static_cast<size_t>(n_plans * kModes), VK_NULL_HANDLE);
  ran_.assign(commands_.size(), 0);
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = pool;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = sets;
  dc->counters().object_creations.fetch_add(1);
  if (vkAllocateCommandBuffers(dc->device(), &ai, commands_.data()) != VK_SUCCESS) {
    return Status::Error(StatusCode::kOutOfMemory, "cannot allocate sampling command buffers");
  }
  for (int i = 0; i < n_plans; ++i) {
    if (logits_[size_t(i)].rows == 0) continue;
    for (int mode = 0; mode < kModes; ++mode) {
      VkPipeline pipeline = VK_NULL_HANDLE;
      STATICLM_RETURN_IF_ERROR(pipelines->Get(kShaders[mode], &pipeline));
      STATICLM_RETURN_IF_ERROR(Record(i, pipeline, commands_[size_t(i * kModes + mode)], buffers));
    }
  }
  return Status::Ok();
}

// One dispatch of one workgroup: a barrier after the plan's writes (an earlier submission),
// the sampling shader, a barrier that makes the token visible to the host.
Status DeviceSampler::Record(int plan_index, VkPipeline pipeline, VkCommandBuffer cb,
                             const SamplingBuffers& buffers) {
  const PlanLogits& l = logits_[size_t(plan_index)];
  const DeviceInfo& info = dc_->info();
  const uint64_t bytes = uint64_t(l.rows) * uint64_t(l.vocab) * sizeof(float);
  const uint64_t aligned = l.offset - l.offset % info.storage_offset_align;
  const uint64_t range = l.offset - aligned + bytes;
  if (range > info.max_storage_range || aligned + range > buffers.io->size) {
    return Status::Error(StatusCode::kUnsupported,
                         "Vulkan: the logits exceed the device's largest storage binding");
  }
  VkDescriptorSetLayout set_layout = pipelines_->set_layout();
  VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  ai.descriptorPool = pool_;
  ai.descriptorSetCount = 1;
  ai.pSetLayouts = &set_layout;
  VkDescriptorSet set = VK_NULL_HANDLE;
  dc_->counters().object_creations.fetch_add(1);
  if (vkAllocateDescriptorSets(dc_->device(), &ai, &set) != VK_SUCCESS) {
    return Status::Error(StatusCode::kOutOfMemory, "cannot allocate a sampling descriptor set");
  }
  VkDescriptorBufferInfo infos[kStorageBindings + 1];
  infos[0] = {buffers.io->buffer, aligned, range};
  infos[1] = {block_.buffer, 0, block_.size};
  for (int i = 2; i < kStorageBindings; ++i)
    infos[i] = {buffers.dummy->buffer, 0, buffers.dummy->size};
  infos[kStorageBindings] = {buffers.step->buffer, 0, buffers.step->size};
  WriteDispatchSet(dc_, set, infos);

  PushConstants pc;
  pc.base[0] = static_cast<uint32_t>((l.offset - aligned) / 4);
  pc.base[1] = 0;
  pc.a = static_cast<uint32_t>(l.vocab);
  pc.b = static_cast<uint32_t>(l.rows);
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  if (vkBeginCommandBuffer(cb, &begin) != VK_SUCCESS) {
    return Status::Error(StatusCode::kInternal, "cannot begin recording a command buffer");
  }
  ShaderWriteBarrier(cb, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT,
                     VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT);
  VkPipelineLayout layout = pipelines_->layout();
  vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
  vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &set, 0, nullptr);
  vkCmdPushConstants(cb, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(PushConstants), &pc);
  vkCmdDispatch(cb, 1, 1, 1);
  ShaderWriteBarrier(cb, VK_ACCESS_HOST_READ_BIT, VK_PIPELINE_STAGE_HOST_BIT);
  if (vkEndCommandBuffer(cb) != VK_SUCCESS) {
    return Status::Error(StatusCode::kInternal, "cannot end recording a command buffer");
  }
  return Status::Ok();
}

Status DeviceSampler::Sample(int plan_index, int32_t row, const DeviceSampling& s, VkFence fence,
                             int32_t* token) {
  if (plan_index < 0 || static_cast<size_t>(plan_index) >= logits_.size() || token == nullptr) {
    return Status::Error(StatusCode::kInvalidArgument, "device sampling: no such plan");
  }
  const PlanLogits& l = logits_[size_t(plan_index)];
  if (l.rows == 0) {
    return Status::Error(StatusCode::kUnsupported, "device sampling: not for this plan's logits");
  }
  if (row < 0 || row >= l.rows) {
    return Status::Error(StatusCode::kInvalidArgument, "device sampling: no such logits row");
  }
  STATICLM_RETURN_IF_ERROR(CheckDeviceSampling(s, l.vocab, kMaxTopK));
  SampleBlock block;
  block.row = static_cast<uint32_t>(row);
  block.k = static_cast<uint32_t>(s.top_k);
  block.temperature = s.temperature;
  // Rounding to float can reach 1.0 for u within 2^-25 of it; the shader then picks the last
  // positive weight, as the host does when its threshold reaches the end.
  block.uniform = static_cast<float>(s.uniform);
  block.top_p = s.top_p;
  block.min_p = s.min_p;
  block.token = INT32_MIN;
  std::memcpy(block_.mapped, &block, sizeof(block));
  const int mode = s.top_k > 0 ? 1 : 0;
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &commands_[size_t(plan_index * kModes + mode)];
  VkResult r = vkQueueSubmit(dc_->queue(), 1, &si, fence);
  if (r == VK_SUCCESS) {
    r = WaitForRun(dc_->device(), fence, kSampleTimeoutNs,
                   &ran_[size_t(plan_index * kModes + mode)]);
  }
  if (r == VK_SUCCESS) r = vkResetFences(dc_->device(), 1, &fence);
  if (r == VK_ERROR_DEVICE_LOST || r == VK_TIMEOUT) {
    device_failure_ = r == VK_TIMEOUT ? "Vulkan sampling timed out; the device is not used again"
                                      : "Vulkan device lost";
    return Status::Error(StatusCode::kInternal, "%s", device_failure_);
  }
  if (r != VK_SUCCESS) return Status::Error(StatusCode::kInternal, "Vulkan sampling submit failed");
  int32_t chosen = 0;
  std::memcpy(&chosen, block_.mapped + offsetof(SampleBlock, token), sizeof(chosen));
  if (chosen == kBadLogits) {
    return Status::Error(StatusCode::kInvalidArgument, "sampler: logits contain NaN or +inf");
  }
  if (chosen == kAllNegInf) {
    return Status::Error(StatusCode::kInvalidArgument, "sampler: every logit is -inf");
  }
  if (chosen < 0 || chosen >= l.vocab) {
    return Status::Error(StatusCode::kInternal, "device sampling returned no token");
  }
  *token = chosen;
  return Status::Ok();
}

}  // namespace staticlm::vulkan
