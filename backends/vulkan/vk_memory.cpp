#include "backends/vulkan/vk_memory.h"

#include <unistd.h>

#include <cstring>

namespace staticlm::vulkan {
namespace {

constexpr VkMemoryPropertyFlags kHostFlags =
    VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;

// The first allowed type having all `required` flags, preferring ones with `preferred` too.
int FindMemoryType(const VkPhysicalDeviceMemoryProperties& m, uint32_t allowed,
                   VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred) {
  int fallback = -1;
  for (uint32_t i = 0; i < m.memoryTypeCount; ++i) {
    if ((allowed & (1u << i)) == 0) continue;
    VkMemoryPropertyFlags f = m.memoryTypes[i].propertyFlags;
    if ((f & required) != required) continue;
    if ((f & preferred) == preferred) return static_cast<int>(i);
    if (fallback < 0) fallback = static_cast<int>(i);
  }
  return fallback;
}

}  // namespace

Status CreateDeviceBuffer(DeviceContext& dc, uint64_t size, VkBufferUsageFlags usage, MemoryUse use,
                          const char* what, DeviceBuffer* out) {
  *out = DeviceBuffer{};
  if (size == 0) size = 16;  // Vulkan buffers cannot be empty
  if (dc.info().max_allocation != 0 && size > dc.info().max_allocation) {
    return Status::Error(StatusCode::kOutOfMemory,
                         "%s needs %llu bytes, more than one allocation may hold on '%s' (%llu)",
                         what, static_cast<unsigned long long>(size), dc.info().name,
                         static_cast<unsigned long long>(dc.info().max_allocation));
  }
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = size;
  bi.usage = usage | VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT;
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  dc.counters().object_creations.fetch_add(1);
  if (vkCreateBuffer(dc.device(), &bi, dc.allocator(), &out->buffer) != VK_SUCCESS) {
    out->buffer = VK_NULL_HANDLE;
    return Status::Error(StatusCode::kOutOfMemory, "cannot create the buffer for %s", what);
  }
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(dc.device(), out->buffer, &req);
  VkMemoryPropertyFlags required = use == MemoryUse::kHost ? kHostFlags : 0;
  VkMemoryPropertyFlags preferred = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | kHostFlags;
  int type = FindMemoryType(dc.memory(), req.memoryTypeBits, required, preferred);
  if (type < 0) {
    return Status::Error(StatusCode::kUnsupported, "no suitable memory type for %s", what);
  }
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = static_cast<uint32_t>(type);
  dc.counters().memory_allocations.fetch_add(1);
  VkResult r = vkAllocateMemory(dc.device(), &ai, dc.allocator(), &out->memory);
  if (r != VK_SUCCESS) {
    out->memory = VK_NULL_HANDLE;
    return Status::Error(
        StatusCode::kOutOfMemory, "out of device memory: %s needs %llu bytes on '%s' (VkResult %d)",
        what, static_cast<unsigned long long>(req.size), dc.info().name, static_cast<int>(r));
  }
  vkBindBufferMemory(dc.device(), out->buffer, out->memory, 0);
  out->size = size;
  VkMemoryPropertyFlags flags = dc.memory().memoryTypes[type].propertyFlags;
  if ((flags & kHostFlags) == kHostFlags) {
    void* p = nullptr;
    if (vkMapMemory(dc.device(), out->memory, 0, VK_WHOLE_SIZE, 0, &p) != VK_SUCCESS) {
      return Status::Error(StatusCode::kOutOfMemory, "cannot map the memory of %s", what);
    }
    out->mapped = static_cast<uint8_t*>(p);
  }
  return Status::Ok();
}

namespace {

constexpr VkExternalMemoryHandleTypeFlagBits kHostAllocation =
    VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;

Status Refused(const char* why) {
  return Status::Error(StatusCode::kUnsupported, "%s", why);
}

// Binds `out->buffer` to imported memory [base, base + size), the buffer starting `delta` in.
Status BindImported(DeviceContext& dc, uint8_t* base, uint64_t size, uint64_t delta,
                    DeviceBuffer* out) {
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(dc.device(), out->buffer, &req);
  if (req.alignment == 0 || delta % req.alignment != 0) {
    return Refused("the weights' offset in their page is not aligned for a buffer");
  }
  if (delta + req.size > size) return Refused("the buffer would reach past the imported pages");
  VkMemoryHostPointerPropertiesEXT props{VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT};
  if (dc.host_pointer_properties()(dc.device(), kHostAllocation, base, &props) != VK_SUCCESS) {
    return Refused("the device cannot import this host memory");
  }
  int type = FindMemoryType(dc.memory(), props.memoryTypeBits & req.memoryTypeBits, 0,
                            VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  if (type < 0) return Refused("no memory type can hold both the buffer and the host memory");
  VkImportMemoryHostPointerInfoEXT import{VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT};
  import.handleType = kHostAllocation;
  import.pHostPointer = base;
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.pNext = &import;
  ai.allocationSize = size;
  ai.memoryTypeIndex = static_cast<uint32_t>(type);
  dc.counters().memory_allocations.fetch_add(1);
  if (vkAllocateMemory(dc.device(), &ai, dc.allocator(), &out->memory) != VK_SUCCESS) {
    out->memory = VK_NULL_HANDLE;
    return Refused("importing the host memory failed");
  }
  if (vkBindBufferMemory(dc.device(), out->buffer, out->memory, delta) != VK_SUCCESS) {
    return Refused("binding the imported host memory failed");
  }
  return Status::Ok();
}

}  // namespace

Status ImportHostBuffer(DeviceContext& dc, const void* data, uint64_t bytes, uint64_t spare,
                        VkBufferUsageFlags usage, DeviceBuffer* out) {
  *out = DeviceBuffer{};
  const uint64_t align = dc.info().host_import_align;
  if (!dc.info().host_import) return Refused("the device lacks VK_EXT_external_memory_host");
  // The aligned range must not reach outside the pages the host mapping covers.
  const long page = sysconf(_SC_PAGESIZE);
  if (page <= 0 || align > static_cast<uint64_t>(page) || static_cast<uint64_t>(page) % align) {
    return Refused("the device's import alignment exceeds the host page size");
  }
  if (data == nullptr || bytes == 0) return Refused("there are no host bytes to import");
  const auto addr = reinterpret_cast<uintptr_t>(data);
  const uint64_t delta = addr % align;
  const uint64_t end = delta + bytes;                       // from the aligned base
  const uint64_t size = (end + align - 1) / align * align;  // whole aligned blocks
  if (end + spare > size) return Refused("the spare bytes past the end may be unmapped");
  VkExternalMemoryBufferCreateInfo external{VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO};
  external.handleTypes = kHostAllocation;
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.pNext = &external;
  bi.size = bytes + spare;
  bi.usage = usage;
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  dc.counters().object_creations.fetch_add(1);
  if (vkCreateBuffer(dc.device(), &bi, dc.allocator(), &out->buffer) != VK_SUCCESS) {
    out->buffer = VK_NULL_HANDLE;
    return Refused("cannot create a buffer for imported host memory");
  }
  // The driver only reads the bytes (storage buffers the shaders never write to).
  auto* base = reinterpret_cast<uint8_t*>(addr - delta);
  Status s = BindImported(dc, base, size, delta, out);
  if (!s.ok()) {
    DestroyDeviceBuffer(dc, out);
    return s;
  }
  out->size = bytes + spare;
  return Status::Ok();
}

void DestroyDeviceBuffer(DeviceContext& dc, DeviceBuffer* b) {
  if (b->buffer != VK_NULL_HANDLE) vkDestroyBuffer(dc.device(), b->buffer, dc.allocator());
  if (b->memory != VK_NULL_HANDLE) vkFreeMemory(dc.device(), b->memory, dc.allocator());
  *b = DeviceBuffer{};
}

Status UploadToBuffer(DeviceContext& dc, VkCommandPool pool, const DeviceBuffer& dst,
                      uint64_t offset, const void* src, uint64_t bytes) {
  if (bytes == 0) return Status::Ok();
  if (dst.mapped != nullptr) {
    std::memcpy(dst.mapped + offset, src, bytes);
    return Status::Ok();
  }
  DeviceBuffer staging;
  Status s = CreateDeviceBuffer(dc, bytes, VK_BUFFER_USAGE_TRANSFER_SRC_BIT, MemoryUse::kHost,
                                "a staging buffer", &staging);
  VkCommandBuffer cb = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  if (s.ok()) {
    std::memcpy(staging.mapped, src, bytes);
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = pool;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    dc.counters().object_creations.fetch_add(2);
    if (vkAllocateCommandBuffers(dc.device(), &ai, &cb) != VK_SUCCESS ||
        vkCreateFence(dc.device(), &fi, dc.allocator(), &fence) != VK_SUCCESS) {
      s = Status::Error(StatusCode::kOutOfMemory, "cannot create an upload command buffer");
    }
  }
  if (s.ok()) {
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    vkBeginCommandBuffer(cb, &bi);
    VkBufferCopy region{0, offset, bytes};
    vkCmdCopyBuffer(cb, staging.buffer, dst.buffer, 1, &region);
    vkEndCommandBuffer(cb);
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cb;
    if (vkQueueSubmit(dc.queue(), 1, &si, fence) != VK_SUCCESS ||
        vkWaitForFences(dc.device(), 1, &fence, VK_TRUE, UINT64_MAX) != VK_SUCCESS) {
      s = Status::Error(StatusCode::kInternal, "uploading to the device failed (device lost?)");
    }
  }
  if (fence != VK_NULL_HANDLE) vkDestroyFence(dc.device(), fence, dc.allocator());
  if (cb != VK_NULL_HANDLE) vkFreeCommandBuffers(dc.device(), pool, 1, &cb);
  DestroyDeviceBuffer(dc, &staging);
  return s;
}

}  // namespace staticlm::vulkan
