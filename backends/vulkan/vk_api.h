// The Vulkan commands staticlm calls, as function pointers loaded at init from the Vulkan loader
// opened at run time (dlopen), so a build with the Vulkan backend starts on a machine without
// libvulkan.so.1 and reports a status instead of failing to load.
//
// Include this header, never <vulkan/vulkan.h> directly: it defines VK_NO_PROTOTYPES, so a
// command missing from the lists below is a compile error rather than a link to a loader
// that may not exist. To call a new command, add it to the list of its level.
//
// Each pointer has the command's own name inside namespace staticlm::vulkan, so call sites
// read as plain Vulkan. Pointers are null until loaded; calling one before its Load* succeeded
// is a bug (every Vulkan object comes from a loaded command, so the backend cannot reach one).
#pragma once

#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <vulkan/vulkan.h>

#include "platform/status.h"

// Commands callable before an instance exists (vkGetInstanceProcAddr with a null instance).
#define STATICLM_VK_GLOBAL_COMMANDS(X) \
  X(vkCreateInstance)                  \
  X(vkEnumerateInstanceLayerProperties)

// Commands of an instance and its physical devices.
#define STATICLM_VK_INSTANCE_COMMANDS(X)      \
  X(vkDestroyInstance)                        \
  X(vkEnumeratePhysicalDevices)               \
  X(vkGetPhysicalDeviceProperties)            \
  X(vkGetPhysicalDeviceProperties2)           \
  X(vkGetPhysicalDeviceFeatures2)             \
  X(vkGetPhysicalDeviceMemoryProperties)      \
  X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkCreateDevice)                           \
  X(vkGetDeviceProcAddr)

// Commands of a device and its children (queues, command buffers, ...).
#define STATICLM_VK_DEVICE_COMMANDS(X) \
  X(vkDestroyDevice)                   \
  X(vkGetDeviceQueue)                  \
  X(vkDeviceWaitIdle)                  \
  X(vkCreateBuffer)                    \
  X(vkDestroyBuffer)                   \
  X(vkGetBufferMemoryRequirements)     \
  X(vkAllocateMemory)                  \
  X(vkFreeMemory)                      \
  X(vkBindBufferMemory)                \
  X(vkMapMemory)                       \
  X(vkCreateShaderModule)              \
  X(vkDestroyShaderModule)             \
  X(vkCreatePipelineCache)             \
  X(vkDestroyPipelineCache)            \
  X(vkGetPipelineCacheData)            \
  X(vkCreatePipelineLayout)            \
  X(vkDestroyPipelineLayout)           \
  X(vkCreateComputePipelines)          \
  X(vkDestroyPipeline)                 \
  X(vkCreateDescriptorSetLayout)       \
  X(vkDestroyDescriptorSetLayout)      \
  X(vkCreateDescriptorPool)            \
  X(vkDestroyDescriptorPool)           \
  X(vkAllocateDescriptorSets)          \
  X(vkUpdateDescriptorSets)            \
  X(vkCreateCommandPool)               \
  X(vkDestroyCommandPool)              \
  X(vkAllocateCommandBuffers)          \
  X(vkFreeCommandBuffers)              \
  X(vkBeginCommandBuffer)              \
  X(vkEndCommandBuffer)                \
  X(vkCmdBindPipeline)                 \
  X(vkCmdBindDescriptorSets)           \
  X(vkCmdPushConstants)                \
  X(vkCmdDispatch)                     \
  X(vkCmdPipelineBarrier)              \
  X(vkCmdCopyBuffer)                   \
  X(vkCreateQueryPool)                 \
  X(vkDestroyQueryPool)                \
  X(vkCmdResetQueryPool)               \
  X(vkCmdWriteTimestamp)               \
  X(vkGetQueryPoolResults)             \
  X(vkCreateFence)                     \
  X(vkDestroyFence)                    \
  X(vkResetFences)                     \
  X(vkWaitForFences)                   \
  X(vkQueueSubmit)

namespace staticlm::vulkan {

#define STATICLM_VK_DECLARE(name) extern PFN_##name name;
STATICLM_VK_DECLARE(vkGetInstanceProcAddr)
STATICLM_VK_GLOBAL_COMMANDS(STATICLM_VK_DECLARE)
STATICLM_VK_INSTANCE_COMMANDS(STATICLM_VK_DECLARE)
STATICLM_VK_DEVICE_COMMANDS(STATICLM_VK_DECLARE)
#undef STATICLM_VK_DECLARE

// The environment variable that names the loader library to open instead of libvulkan.so.1
// (a path or a name dlopen searches for); read at each LoadVulkan until one load succeeds.
constexpr const char* kVulkanLoaderEnv = "STATICLM_VULKAN_LOADER";

// Opens the Vulkan loader and resolves vkGetInstanceProcAddr and the global commands. Init
// only (opens a library, allocates). Thread-safe. Once it has succeeded, later calls return Ok
// at once and the library stays open for the life of the process (the pointers point into
// it); a failure leaves nothing loaded, so a later call tries again. Fails with a message
// starting "no Vulkan loader" that names the library tried, when it cannot be opened or does
// not export vkGetInstanceProcAddr, and with a clear status naming a missing global command.
Status LoadVulkan();

// Resolves the instance- and device-level commands through `instance` (just created with the
// loaded vkCreateInstance). Init only; thread-safe; resolves once per process: a loader
// answers core commands with its own entry points, which dispatch on the handle they are
// given and so serve every instance and device, with each instance's layers. Fails with a
// status naming the first command the loader does not provide.
Status LoadInstanceCommands(VkInstance instance);

// Checks that `device` (just created) provides every device-level command, naming the first
// it does not. Init only. The pointers called stay the loader's dispatching ones: a device's
// own pointers (vkGetDeviceProcAddr) would be wrong for another device, or after its
// instance unloaded a layer, and every context in the process shares these globals.
Status LoadDeviceCommands(VkDevice device);

}  // namespace staticlm::vulkan
