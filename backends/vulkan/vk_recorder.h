// Records a plan's dispatches into one command buffer, once, at init: allocates and writes a
// descriptor set per dispatch (binding each tensor at an aligned offset, the remainder going
// to the push constants), pushes the constants, inserts barriers, and ends with a barrier that
// makes the results visible to the host. The command buffer is replayed every step.
#pragma once

#include <vector>

#include "backends/vulkan/vk_api.h"
#include "backends/vulkan/vk_device.h"
#include "backends/vulkan/vk_dispatch.h"
#include "backends/vulkan/vk_memory.h"
#include "backends/vulkan/vk_pipelines.h"
#include "backends/vulkan/vk_timestamps.h"
#include "platform/status.h"

namespace staticlm::vulkan {

struct RecordInputs {
  DeviceContext* dc;
  PipelineSet* pipelines;
  const DeviceBuffer* buffers;  // indexed by Slot
  const DeviceBuffer* step;     // the uniform block of the step's parameters
  VkDescriptorPool pool;
  const DispatchTimer* timer;  // null, or prepared: the plan's dispatches are timed
  int plan;                    // the plan's index (the timer's queries)
};

// Init only. `dispatches` must already hold every dispatch of the plan.
Status RecordPlan(const RecordInputs& in, std::vector<Dispatch>& dispatches, VkCommandBuffer cb);

// Writes every binding of a dispatch's descriptor set: storage buffers 0 … kStorageBindings − 1
// from infos[0 … kStorageBindings − 1], the step's uniform block from infos[kStorageBindings].
// Init only (counted as descriptor updates).
void WriteDispatchSet(DeviceContext* dc, VkDescriptorSet set, const VkDescriptorBufferInfo* infos);

// Makes compute-shader writes visible to `dst_access` at `dst_stage`.
void ShaderWriteBarrier(VkCommandBuffer cb, VkAccessFlags dst_access,
                        VkPipelineStageFlags dst_stage);

}  // namespace staticlm::vulkan
