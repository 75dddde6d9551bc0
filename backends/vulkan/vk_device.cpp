#include "backends/vulkan/vk_device.h"

#include "backends/vulkan/vk_driver_modules.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

namespace staticlm::vulkan {
namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

VKAPI_ATTR VkBool32 VKAPI_CALL OnValidationMessage(VkDebugUtilsMessageSeverityFlagBitsEXT,
                                                   VkDebugUtilsMessageTypeFlagsEXT,
                                                   const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                   void* user) {
  static_cast<std::atomic<uint64_t>*>(user)->fetch_add(1);
  std::fprintf(stderr, "staticlm: vulkan validation: %s\n", data->pMessage);
  return VK_FALSE;
}

bool LayerInstalled(const char* name) {
  uint32_t n = 0;
  if (vkEnumerateInstanceLayerProperties(&n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkLayerProperties> layers(n);
  if (vkEnumerateInstanceLayerProperties(&n, layers.data()) != VK_SUCCESS) return false;
  for (const VkLayerProperties& l : layers) {
    if (std::strcmp(l.layerName, name) == 0) return true;
  }
  return false;
}

const char* TypeName(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return "integrated gpu";
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return "discrete gpu";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return "virtual gpu";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return "cpu";
    default:
      return "other";
  }
}

Status InstanceError(VkResult r) {
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER) {
    return Status::Error(StatusCode::kUnsupported, "no Vulkan driver (vkCreateInstance: no ICD)");
  }
  return Status::Error(StatusCode::kUnsupported, "vkCreateInstance failed (VkResult %d)",
                       static_cast<int>(r));
}

}  // namespace

DeviceContext::~DeviceContext() {
  if (device_ != VK_NULL_HANDLE) vkDestroyDevice(device_, &allocator_);
  if (messenger_ != VK_NULL_HANDLE) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy != nullptr) destroy(instance_, messenger_, &allocator_);
  }
  // Null only when the loader lacked it (LoadInstanceCommands failed): the instance leaks.
  if (instance_ != VK_NULL_HANDLE && vkDestroyInstance != nullptr) {
    vkDestroyInstance(instance_, &allocator_);
  }
  VkReleaseTally& tally = ProcessReleaseTally();
  tally.unreleased_host_allocations.fetch_add(counters_.driver_host_allocations.load() -
                                              counters_.driver_host_frees.load());
  tally.contexts_destroyed.fetch_add(1);
}

Status DeviceContext::Init(const DeviceOptions& options) {
  STATICLM_RETURN_IF_ERROR(LoadVulkan());
  STATICLM_RETURN_IF_ERROR(CreateInstance(options.validation));
  STATICLM_RETURN_IF_ERROR(PickDevice(options.index));
  return CreateLogicalDevice();
}

Status DeviceContext::CreateInstance(bool validation) {
  validation_on_ = validation && LayerInstalled(kValidationLayer);
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "staticlm";
  app.apiVersion = VK_API_VERSION_1_1;
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;
  const char* layers[] = {kValidationLayer};
  const char* extensions[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
  VkDebugUtilsMessengerCreateInfoEXT messenger{
      VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  messenger.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                              VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  messenger.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                          VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                          VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  messenger.pfnUserCallback = OnValidationMessage;
  messenger.pUserData = &validation_messages_;
  // Synchronization validation too: it reports a missing barrier between dependent dispatches.
  // Sanitizer builds too: the layer (1.3.239) leaks its state at teardown, which LeakSanitizer
  // attributes to the layer and reports apart from staticlm's leaks (vk_driver_modules.h).
  VkValidationFeatureEnableEXT enables[1] = {
      VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
  VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  features.enabledValidationFeatureCount = 1;
  features.pEnabledValidationFeatures = enables;
  if (validation_on_) {
    ci.enabledLayerCount = 1;
    ci.ppEnabledLayerNames = layers;
    ci.enabledExtensionCount = 1;
    ci.ppEnabledExtensionNames = extensions;
    ci.pNext = &messenger;  // also reports problems in vkCreateInstance itself
    messenger.pNext = &features;
  }
  counters_.object_creations.fetch_add(1);
  VkResult r = vkCreateInstance(&ci, &allocator_, &instance_);
  if (r != VK_SUCCESS) {
    instance_ = VK_NULL_HANDLE;
    return InstanceError(r);
  }
  KeepDriverModulesLoaded();
  STATICLM_RETURN_IF_ERROR(LoadInstanceCommands(instance_));
  if (validation_on_) {
    messenger.pNext = nullptr;  // the features belonged to the instance
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkCreateDebugUtilsMessengerEXT"));
    if (create == nullptr ||
        create(instance_, &messenger, &allocator_, &messenger_) != VK_SUCCESS) {
      return Status::Error(StatusCode::kUnsupported, "cannot create the validation messenger");
    }
  }
  return Status::Ok();
}

Status DeviceContext::PickDevice(int index) {
  uint32_t n = 0;
  if (vkEnumeratePhysicalDevices(instance_, &n, nullptr) != VK_SUCCESS || n == 0) {
    return Status::Error(StatusCode::kUnsupported, "no Vulkan device");
  }
  if (index < 0 || static_cast<uint32_t>(index) >= n) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "Vulkan device %d does not exist (this machine has %u)", index, n);
  }
  std::vector<VkPhysicalDevice> devices(n);
  vkEnumeratePhysicalDevices(instance_, &n, devices.data());
  physical_ = devices[static_cast<size_t>(index)];

  VkPhysicalDeviceSubgroupProperties subgroup{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props.pNext = &subgroup;
  VkPhysicalDeviceMaintenance3Properties m3{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  subgroup.pNext = &m3;
  VkPhysicalDeviceExternalMemoryHostPropertiesEXT host{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT};
  // Chained only when offered: a device may reject a structure of an extension it lacks.
  bool offers_host_import = DeviceHasExtension(VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
  if (offers_host_import) m3.pNext = &host;
  vkGetPhysicalDeviceProperties2(physical_, &props);
  const VkPhysicalDeviceProperties& p = props.properties;
  if (p.apiVersion < VK_API_VERSION_1_1) {
    return Status::Error(StatusCode::kUnsupported, "Vulkan device '%s' supports only Vulkan 1.0",
                         p.deviceName);
  }
  std::snprintf(info_.name, sizeof(info_.name), "%s", p.deviceName);
  info_.type = p.deviceType;
  info_.vendor_id = p.vendorID;
  info_.device_id = p.deviceID;
  std::memcpy(info_.pipeline_cache_uuid, p.pipelineCacheUUID, VK_UUID_SIZE);
  info_.max_storage_range = p.limits.maxStorageBufferRange;
  info_.storage_offset_align = p.limits.minStorageBufferOffsetAlignment;
  info_.uniform_offset_align = p.limits.minUniformBufferOffsetAlignment;
  info_.max_allocation = m3.maxMemoryAllocationSize;
  info_.max_group_count_x = p.limits.maxComputeWorkGroupCount[0];
  info_.timestamp_period_ns = p.limits.timestampPeriod;
  info_.subgroup_size = subgroup.subgroupSize;
  info_.subgroup_arithmetic =
      (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0 &&
      (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) != 0 &&
      subgroup.subgroupSize >= 4 && subgroup.subgroupSize <= 64;
  info_.subgroup_ballot = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0 &&
                          (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_BALLOT_BIT) != 0;
  if (DeviceHasExtension(VK_EXT_SCALAR_BLOCK_LAYOUT_EXTENSION_NAME)) {
    VkPhysicalDeviceScalarBlockLayoutFeaturesEXT scalar{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SCALAR_BLOCK_LAYOUT_FEATURES_EXT};
    VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    features.pNext = &scalar;
    vkGetPhysicalDeviceFeatures2(physical_, &features);
    info_.scalar_block_layout = scalar.scalarBlockLayout == VK_TRUE;
  }
  info_.host_import = offers_host_import && host.minImportedHostPointerAlignment > 0;
  info_.host_import_align = info_.host_import ? host.minImportedHostPointerAlignment : 0;
  vkGetPhysicalDeviceMemoryProperties(physical_, &memory_);
  return Status::Ok();
}

Status DeviceContext::CreateLogicalDevice() {
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical_, &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  vkGetPhysicalDeviceQueueFamilyProperties(physical_, &n, families.data());
  bool found = false;
  for (uint32_t i = 0; i < n && !found; ++i) {
    if ((families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) != 0) {
      queue_family_ = i;
      info_.timestamp_bits = families[i].timestampValidBits;
      found = true;
    }
  }
  if (!found) {
    return Status::Error(StatusCode::kUnsupported, "Vulkan device '%s' has no compute queue",
                         info_.name);
  }
  float priority = 1.0f;
  VkDeviceQueueCreateInfo q{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  q.queueFamilyIndex = queue_family_;
  q.queueCount = 1;
  q.pQueuePriorities = &priority;
  // The shaders read and write only 32-bit words (halves are packed two a word), so they need
  // no 8/16-bit storage feature and run on any Vulkan 1.1 device; the extensions below are
  // optional (without them the weights are copied and the CPU-device matmul loads word by word).
  VkDeviceCreateInfo ci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  ci.queueCreateInfoCount = 1;
  ci.pQueueCreateInfos = &q;
  // External memory host lets the weights be used in place from the model's mapping instead
  // of copied (vk_memory.h); scalar block layout lets the CPU-device matmul read whole weight
  // blocks with a few wide loads (shaders/weight_units.glsl).
  const char* extensions[2];
  uint32_t n_extensions = 0;
  if (info_.host_import) extensions[n_extensions++] = VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME;
  VkPhysicalDeviceScalarBlockLayoutFeaturesEXT scalar{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SCALAR_BLOCK_LAYOUT_FEATURES_EXT};
  if (info_.scalar_block_layout) {
    extensions[n_extensions++] = VK_EXT_SCALAR_BLOCK_LAYOUT_EXTENSION_NAME;
    scalar.scalarBlockLayout = VK_TRUE;
    ci.pNext = &scalar;
  }
  ci.enabledExtensionCount = n_extensions;
  ci.ppEnabledExtensionNames = n_extensions > 0 ? extensions : nullptr;
  counters_.object_creations.fetch_add(1);
  VkResult r = vkCreateDevice(physical_, &ci, &allocator_, &device_);
  if (r != VK_SUCCESS) {
    device_ = VK_NULL_HANDLE;
    return Status::Error(StatusCode::kUnsupported, "vkCreateDevice failed on '%s' (VkResult %d)",
                         info_.name, static_cast<int>(r));
  }
  STATICLM_RETURN_IF_ERROR(LoadDeviceCommands(device_));
  vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
  if (info_.host_import) {
    host_pointer_properties_ = reinterpret_cast<PFN_vkGetMemoryHostPointerPropertiesEXT>(
        vkGetDeviceProcAddr(device_, "vkGetMemoryHostPointerPropertiesEXT"));
    info_.host_import = host_pointer_properties_ != nullptr;
  }
  return Status::Ok();
}

bool DeviceContext::DeviceHasExtension(const char* name) const {
  auto enumerate = reinterpret_cast<PFN_vkEnumerateDeviceExtensionProperties>(
      vkGetInstanceProcAddr(instance_, "vkEnumerateDeviceExtensionProperties"));
  uint32_t n = 0;
  if (enumerate == nullptr || enumerate(physical_, nullptr, &n, nullptr) != VK_SUCCESS) {
    return false;
  }
  std::vector<VkExtensionProperties> extensions(n);
  if (enumerate(physical_, nullptr, &n, extensions.data()) != VK_SUCCESS) return false;
  for (uint32_t i = 0; i < n; ++i) {
    if (std::strcmp(extensions[i].extensionName, name) == 0) return true;
  }
  return false;
}

Status DescribeVulkanDevices(char* out, size_t capacity, int* n_devices) {
  *n_devices = 0;
  if (capacity > 0) out[0] = '\0';
  STATICLM_RETURN_IF_ERROR(LoadVulkan());
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.apiVersion = VK_API_VERSION_1_1;
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;
  VkInstance instance = VK_NULL_HANDLE;
  VkResult r = vkCreateInstance(&ci, nullptr, &instance);
  if (r != VK_SUCCESS) return InstanceError(r);
  KeepDriverModulesLoaded();
  Status loaded = LoadInstanceCommands(instance);
  if (!loaded.ok()) {
    if (vkDestroyInstance != nullptr) vkDestroyInstance(instance, nullptr);
    return loaded;
  }
  uint32_t n = 0;
  vkEnumeratePhysicalDevices(instance, &n, nullptr);
  std::vector<VkPhysicalDevice> devices(n);
  vkEnumeratePhysicalDevices(instance, &n, devices.data());
  size_t used = 0;
  for (uint32_t i = 0; i < n && capacity > 0; ++i) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(devices[i], &p);
    int w = std::snprintf(out + used, capacity - used, "%u: %s [%s, Vulkan %u.%u]\n", i,
                          p.deviceName, TypeName(p.deviceType), VK_API_VERSION_MAJOR(p.apiVersion),
                          VK_API_VERSION_MINOR(p.apiVersion));
    if (w > 0) used = std::min(capacity - 1, used + static_cast<size_t>(w));
  }
  vkDestroyInstance(instance, nullptr);
  *n_devices = static_cast<int>(n);
  if (n == 0) return Status::Error(StatusCode::kUnsupported, "no Vulkan device");
  return Status::Ok();
}

}  // namespace staticlm::vulkan
