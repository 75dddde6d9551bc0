// Waiting on a submit's fence. A wait that runs out means a hung device: the backend then stops
// using it (vulkan_backend.cpp, vk_sampling.cpp). The first run of a recorded command buffer
// may include the driver compiling its pipelines' code — lavapipe compiles each shader variant
// at its first dispatch, 3–4 s of CPU a variant on the development machines and more on a
// loaded one — so it is given ten minutes rather than the steady bound, which Gemma 3's first
// step with a q8 cache overran on a cold shader cache beside other work.
#pragma once

#include <cstdint>

#include "backends/vulkan/vk_api.h"

namespace staticlm::vulkan {

constexpr uint64_t kFirstRunTimeoutNs = 600ull * 1000 * 1000 * 1000;

// Waits for `fence` up to `steady_ns`, or kFirstRunTimeoutNs while *ran is 0 (a recording not
// yet run to its end); a finished wait sets *ran. Run phase: no allocation.
inline VkResult WaitForRun(VkDevice device, VkFence fence, uint64_t steady_ns, uint8_t* ran) {
  const VkResult r =
      vkWaitForFences(device, 1, &fence, VK_TRUE, *ran != 0 ? steady_ns : kFirstRunTimeoutNs);
  if (r == VK_SUCCESS) *ran = 1;
  return r;
}

}  // namespace staticlm::vulkan
