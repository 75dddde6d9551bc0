// Device buffers: one VkBuffer bound to its own VkDeviceMemory, created at init. Buffers the
// host reads or writes at run time (KV cache, io, step parameters) live in host-visible,
// coherent memory and stay mapped; the others prefer device-local memory and are filled once
// through a staging buffer when that memory is not host-visible.
#pragma once

#include <cstdint>

#include "backends/vulkan/vk_api.h"
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

// Init only: a read-only buffer over the host bytes [data, data + bytes + spare) used in place
// (VK_EXT_external_memory_host), so they are not held twice. Imports the enclosing range of
// whole pages and binds the buffer where `data` starts, so buffer offsets address the same
// bytes as a copy would. `spare` bytes past the end are read too: they must lie in the page of
// the last byte (a mapping covers whole pages). Fails with kUnsupported and the reason when the
// device, the alignment or the memory cannot be imported; `out` is then empty and the caller
// copies instead. `data` must outlive the buffer.
Status ImportHostBuffer(DeviceContext& dc, const void* data, uint64_t bytes, uint64_t spare,
                        VkBufferUsageFlags usage, DeviceBuffer* out);

// Init only: copies `bytes` from host memory into `dst` at `offset`, directly when mapped,
// else through a temporary staging buffer and a one-off command buffer from `pool`.
Status UploadToBuffer(DeviceContext& dc, VkCommandPool pool, const DeviceBuffer& dst,
                      uint64_t offset, const void* src, uint64_t bytes);

}  // namespace staticlm::vulkan
