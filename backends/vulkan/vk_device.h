// Instance and device: loads the driver, optionally enables the Khronos validation layer with
// a debug messenger that counts every message, picks physical device `index`, reads the
// properties the kernels depend on, and creates the logical device with one compute queue.
// Init only. Every handle is created with the counting allocator of `counters`.
#pragma once

#include <atomic>
#include <cstdint>

#include "backends/vulkan/vk_api.h"
#include "backends/vulkan/vk_counters.h"
#include "platform/status.h"

namespace staticlm::vulkan {

struct DeviceOptions {
  int index = 0;            // physical device index, in vkEnumeratePhysicalDevices order
  bool validation = false;  // enable VK_LAYER_KHRONOS_validation when installed
};

// What the kernel choice depends on, read once at init.
struct DeviceInfo {
  char name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE] = {0};
  VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  uint32_t vendor_id = 0, device_id = 0;
  uint8_t pipeline_cache_uuid[VK_UUID_SIZE] = {0};
  uint64_t max_storage_range = 0;      // maxStorageBufferRange
  uint64_t storage_offset_align = 1;   // minStorageBufferOffsetAlignment
  uint64_t uniform_offset_align = 1;   // minUniformBufferOffsetAlignment
  uint64_t max_allocation = 0;         // maxMemoryAllocationSize
  uint32_t max_group_count_x = 65535;  // maxComputeWorkGroupCount[0]
  uint32_t subgroup_size = 1;
  bool subgroup_arithmetic = false;  // compute shaders may use subgroupAdd
  bool subgroup_ballot = false;      // compute shaders may use subgroupBroadcast
  // VK_EXT_scalar_block_layout is enabled: shaders may read structs packed to their bytes.
  bool scalar_block_layout = false;
  // VK_EXT_external_memory_host is enabled: buffers may use host memory imported in place.
  bool host_import = false;
  uint64_t host_import_align = 0;  // minImportedHostPointerAlignment (pointer and size)
  // Timestamp queries on the compute queue: its timestampValidBits (0: none) and the
  // nanoseconds per tick (timestampPeriod).
  uint32_t timestamp_bits = 0;
  float timestamp_period_ns = 0.0f;
};

class DeviceContext {
 public:
  DeviceContext() { ProcessReleaseTally().contexts_created.fetch_add(1); }
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;
  // Destroys the device and instance, then adds to ProcessReleaseTally() what the driver still
  // holds from the counting allocator (0 when every object was destroyed first).
  ~DeviceContext();

  Status Init(const DeviceOptions& options);

  VkInstance instance() const { return instance_; }
  VkPhysicalDevice physical() const { return physical_; }
  VkDevice device() const { return device_; }
  VkQueue queue() const { return queue_; }
  uint32_t queue_family() const { return queue_family_; }
  const DeviceInfo& info() const { return info_; }
  const VkPhysicalDeviceMemoryProperties& memory() const { return memory_; }
  const VkAllocationCallbacks* allocator() const { return &allocator_; }
  VkCounters& counters() { return counters_; }
  // Messages the validation layer sent (0 when validation is off).
  uint64_t validation_messages() const { return validation_messages_.load(); }
  bool validation_enabled() const { return validation_on_; }
  // vkGetMemoryHostPointerPropertiesEXT; non-null exactly when info().host_import.
  PFN_vkGetMemoryHostPointerPropertiesEXT host_pointer_properties() const {
    return host_pointer_properties_;
  }

 private:
  Status CreateInstance(bool validation);
  Status PickDevice(int index);
  Status CreateLogicalDevice();
  bool DeviceHasExtension(const char* name) const;

  VkCounters counters_;
  VkAllocationCallbacks allocator_ = MakeCountingAllocator(&counters_);
  std::atomic<uint64_t> validation_messages_{0};
  bool validation_on_ = false;
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  PFN_vkGetMemoryHostPointerPropertiesEXT host_pointer_properties_ = nullptr;
  DeviceInfo info_;
  VkPhysicalDeviceMemoryProperties memory_{};
};

// One line per Vulkan device ("0: llvmpipe (LLVM 15.0.6, 256 bits) [cpu]") into `out`; init
// only. Fails with a clear status when there is no loader or no device.
Status DescribeVulkanDevices(char* out, size_t capacity, int* n_devices);

}  // namespace staticlm::vulkan
