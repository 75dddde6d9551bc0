// Counts of what the Vulkan backend asks of the driver, so tests can prove that the run phase
// creates nothing: object creations, device memory allocations and descriptor updates made
// through the wrappers in vk_calls.h, and host allocations the driver makes through our
// VkAllocationCallbacks (reported separately: they are the driver's, not staticlm's).
#pragma once

#include <atomic>
#include <cstdint>

#include "backends/vulkan/vk_api.h"

namespace staticlm::vulkan {

struct VkCounters {
  std::atomic<uint64_t> object_creations{0};    // vkCreate*, vkAllocateCommandBuffers/Sets
  std::atomic<uint64_t> memory_allocations{0};  // vkAllocateMemory
  std::atomic<uint64_t> descriptor_updates{0};  // descriptors written by vkUpdateDescriptorSets
  std::atomic<uint64_t> driver_host_allocations{0};  // through the allocation callbacks
  std::atomic<uint64_t> driver_host_frees{0};
};

struct VkCountersSnapshot {
  uint64_t object_creations, memory_allocations, descriptor_updates, driver_host_allocations;
};

inline VkCountersSnapshot Snapshot(const VkCounters& c) {
  return {c.object_creations.load(), c.memory_allocations.load(), c.descriptor_updates.load(),
          c.driver_host_allocations.load()};
}

// What every DeviceContext of the process left behind, added when it is destroyed. The driver
// makes every host allocation for staticlm's instance, device and objects through the counting
// callbacks, and frees it when the object is destroyed; so a context that destroyed each object
// it made, then its device and instance, leaves 0 unreleased. This is the check on staticlm's
// Vulkan objects that LeakSanitizer cannot make: their memory is allocated with the driver's
// code in the stack, which the sanitizer build's suppressions attribute to the driver
// (vk_driver_modules.cpp, issue 19).
struct VkReleaseTally {
  std::atomic<uint64_t> contexts_created{0};
  std::atomic<uint64_t> contexts_destroyed{0};
  // Driver host allocations through the callbacks minus frees, summed at each destruction.
  std::atomic<uint64_t> unreleased_host_allocations{0};
};

// The process's tally. Any phase; never allocates.
VkReleaseTally& ProcessReleaseTally();

// Allocation callbacks that forward to the C heap and count into `counters` (which must
// outlive every Vulkan object created with them).
VkAllocationCallbacks MakeCountingAllocator(VkCounters* counters);

}  // namespace staticlm::vulkan
