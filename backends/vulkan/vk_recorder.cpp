#include "backends/vulkan/vk_recorder.h"

#include <algorithm>

namespace staticlm::vulkan {
namespace {

// The descriptor for `r`, and the offset of the tensor inside it in the region's units.
Status Resolve(const RecordInputs& in, const Region& r, VkDescriptorBufferInfo* info,
               uint32_t* base_units) {
  const DeviceBuffer& b = in.buffers[static_cast<int>(r.slot)];
  const DeviceInfo& dev = in.dc->info();
  if (r.offset % 4 != 0) {
    return Status::Error(StatusCode::kUnsupported, "Vulkan: tensor %s is not 4-byte aligned",
                         r.name);
  }
  uint64_t aligned = 0;
  if (!UnitBindingOffset(r.offset, dev.storage_offset_align, r.unit_bytes, &aligned)) {
    return Status::Error(StatusCode::kInternal,
                         "Vulkan: no binding offset for tensor %s in whole %u-byte units", r.name,
                         r.unit_bytes);
  }
  // Weights get one word past the end: the quantized loaders may read it (shaders/dequant.glsl).
  // Nothing else does, and a range reaching into the next tensor would make two dispatches
  // look dependent to synchronization validation.
  uint64_t spare = r.slot == Slot::kWeights ? 4 : 0;
  uint64_t range = std::min<uint64_t>(r.offset - aligned + r.bytes + spare, b.size - aligned);
  if (range > dev.max_storage_range) {
    return Status::Error(StatusCode::kUnsupported,
                         "Vulkan: tensor %s (%llu bytes) exceeds the device's largest storage "
                         "binding (%llu bytes)",
                         r.name, static_cast<unsigned long long>(r.bytes),
                         static_cast<unsigned long long>(dev.max_storage_range));
  }
  if (range == 0) range = 4;
  *info = VkDescriptorBufferInfo{b.buffer, aligned, range};
  *base_units = static_cast<uint32_t>((r.offset - aligned) / r.unit_bytes);
  return Status::Ok();
}

}  // namespace

void WriteDispatchSet(DeviceContext* dc, VkDescriptorSet set, const VkDescriptorBufferInfo* infos) {
  VkWriteDescriptorSet writes[kStorageBindings + 1];
  for (int i = 0; i <= kStorageBindings; ++i) {
    writes[i] = VkWriteDescriptorSet{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstSet = set;
    writes[i].dstBinding = static_cast<uint32_t>(i);
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = i < kStorageBindings ? VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
                                                    : VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  dc->counters().descriptor_updates.fetch_add(kStorageBindings + 1);
  vkUpdateDescriptorSets(dc->device(), kStorageBindings + 1, writes, 0, nullptr);
}

void ShaderWriteBarrier(VkCommandBuffer cb, VkAccessFlags dst_access,
                        VkPipelineStageFlags dst_stage) {
  VkMemoryBarrier m{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  m.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  m.dstAccessMask = dst_access;
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, dst_stage, 0, 1, &m, 0, nullptr, 0,
                       nullptr);
}

Status RecordPlan(const RecordInputs& in, std::vector<Dispatch>& dispatches, VkCommandBuffer cb) {
  VkDevice dev = in.dc->device();
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  if (vkBeginCommandBuffer(cb, &begin) != VK_SUCCESS) {
    return Status::Error(StatusCode::kInternal, "cannot begin recording a command buffer");
  }
  VkPipelineLayout layout = in.pipelines->layout();
  VkDescriptorSetLayout set_layout = in.pipelines->set_layout();
  if (in.timer != nullptr) in.timer->RecordStart(cb, in.plan);
  for (size_t index = 0; index < dispatches.size(); ++index) {
    Dispatch& d = dispatches[index];
    VkPipeline pipeline = VK_NULL_HANDLE;
    STATICLM_RETURN_IF_ERROR(in.pipelines->Get(d.shader, &pipeline));
    VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    ai.descriptorPool = in.pool;
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &set_layout;
    VkDescriptorSet set = VK_NULL_HANDLE;
    in.dc->counters().object_creations.fetch_add(1);
    if (vkAllocateDescriptorSets(dev, &ai, &set) != VK_SUCCESS) {
      return Status::Error(StatusCode::kOutOfMemory, "cannot allocate a descriptor set");
    }
    VkDescriptorBufferInfo infos[kStorageBindings + 1];
    for (int i = 0; i < kStorageBindings; ++i) {
      STATICLM_RETURN_IF_ERROR(Resolve(in, d.bind[i], &infos[i], &d.pc.base[i]));
    }
    infos[kStorageBindings] = VkDescriptorBufferInfo{in.step->buffer, 0, in.step->size};
    WriteDispatchSet(in.dc, set, infos);
    if (d.barrier_before) {
      ShaderWriteBarrier(cb, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT);
    }
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
    vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &set, 0, nullptr);
    vkCmdPushConstants(cb, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(PushConstants), &d.pc);
    vkCmdDispatch(cb, d.groups[0], d.groups[1], d.groups[2]);
    if (in.timer != nullptr) in.timer->RecordAfter(cb, in.plan, index);
  }
  // Logits and cache writes become visible to the host once the fence signals.
  ShaderWriteBarrier(cb, VK_ACCESS_HOST_READ_BIT, VK_PIPELINE_STAGE_HOST_BIT);
  if (vkEndCommandBuffer(cb) != VK_SUCCESS) {
    return Status::Error(StatusCode::kInternal, "cannot end recording a command buffer");
  }
  return Status::Ok();
}

}  // namespace staticlm::vulkan
