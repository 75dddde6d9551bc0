#include "backends/vulkan/vk_counters.h"

#include <malloc.h>

#include <cstdlib>
#include <cstring>

namespace staticlm::vulkan {
namespace {

void* VKAPI_CALL Allocate(void* user, size_t size, size_t alignment, VkSystemAllocationScope) {
  static_cast<VkCounters*>(user)->driver_host_allocations.fetch_add(1);
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  void* p = nullptr;
  if (posix_memalign(&p, alignment, size == 0 ? 1 : size) != 0) return nullptr;
  return p;
}

void VKAPI_CALL Free(void* user, void* memory) {
  if (memory == nullptr) return;
  static_cast<VkCounters*>(user)->driver_host_frees.fetch_add(1);
  std::free(memory);
}

void* VKAPI_CALL Reallocate(void* user, void* original, size_t size, size_t alignment,
                            VkSystemAllocationScope scope) {
  if (original == nullptr) return Allocate(user, size, alignment, scope);
  if (size == 0) {
    Free(user, original);
    return nullptr;
  }
  void* p = Allocate(user, size, alignment, scope);
  if (p == nullptr) return nullptr;
  size_t old_size = malloc_usable_size(original);
  std::memcpy(p, original, old_size < size ? old_size : size);
  Free(user, original);
  return p;
}

}  // namespace

VkReleaseTally& ProcessReleaseTally() {
  static VkReleaseTally tally;
  return tally;
}

VkAllocationCallbacks MakeCountingAllocator(VkCounters* counters) {
  VkAllocationCallbacks a{};
  a.pUserData = counters;
  a.pfnAllocation = Allocate;
  a.pfnReallocation = Reallocate;
  a.pfnFree = Free;
  return a;
}

}  // namespace staticlm::vulkan
