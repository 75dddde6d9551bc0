// Device buffers: one VkBuffer bound to its own VkDeviceMemory, created at init. Buffers the
// host reads or writes at run time (KV cache, io, step parameters) live in host-visible,
// coherent memory and stay mapped; the others prefer device-local memory and are filled once
// through a staging buffer when that memory is not host-visible.
#pragma once

#include <cstdint>

#include <vulkan/vulkan.h>

#include "backends/vulkan/vk_device.h"
#include "platform/status.h"

namespace staticlm::vulkan {

enum class MemoryUse {
  kDevice,  // read and written by shaders; the host writes it once at init
  kHost,    // the host reads or writes it between steps: must be mappable and coherent
};

struct DeviceBuffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  uint8_t* mapped = nullptr;  // non-null when host-visible
  uint64_t size = 0;
};

// Init only. `what` names the buffer in errors ("the KV cache").
Status CreateDeviceBuffer(DeviceContext& dc, uint64_t size, VkBufferUsageFlags usage, MemoryUse use,
                          const char* what, DeviceBuffer* out);
void DestroyDeviceBuffer(DeviceContext& dc, DeviceBuffer* b);

// Init only: copies `bytes` from host memory into `dst` at `offset`, directly when mapped,
// else through a temporary staging buffer and a one-off command buffer from `pool`.
Status UploadToBuffer(DeviceContext& dc, VkCommandPool pool, const DeviceBuffer& dst,
                      uint64_t offset, const void* src, uint64_t bytes);

}  // namespace staticlm::vulkan
