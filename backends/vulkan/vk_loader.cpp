#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "backends/vulkan/vk_api.h"
#include "platform/driver_scope.h"

namespace staticlm::vulkan {

#define STATICLM_VK_DEFINE(name) PFN_##name name = nullptr;
STATICLM_VK_DEFINE(vkGetInstanceProcAddr)
STATICLM_VK_GLOBAL_COMMANDS(STATICLM_VK_DEFINE)
STATICLM_VK_INSTANCE_COMMANDS(STATICLM_VK_DEFINE)
STATICLM_VK_DEVICE_COMMANDS(STATICLM_VK_DEFINE)
#undef STATICLM_VK_DEFINE

namespace {

// The loader's own pointers. The public ones above point at InDriver thunks that call these
// inside a driver_scope::Scope, so every heap event and thread inside a Vulkan command is
// counted as the driver's (platform/driver_scope.h), without a mark at each call site.
#define STATICLM_VK_DEFINE_RAW(name) PFN_##name raw_##name = nullptr;
STATICLM_VK_DEFINE_RAW(vkGetInstanceProcAddr)
STATICLM_VK_GLOBAL_COMMANDS(STATICLM_VK_DEFINE_RAW)
STATICLM_VK_INSTANCE_COMMANDS(STATICLM_VK_DEFINE_RAW)
STATICLM_VK_DEVICE_COMMANDS(STATICLM_VK_DEFINE_RAW)
#undef STATICLM_VK_DEFINE_RAW

template <auto& Raw, typename R, typename... Args>
R VKAPI_PTR InDriver(Args... args) {
  driver_scope::Scope scope;
  return Raw(args...);
}

// The thunk for `Raw`, whose type gives the command's signature.
template <auto& Raw, typename R, typename... Args>
auto ThunkFor(R(VKAPI_PTR*)(Args...)) -> R(VKAPI_PTR*)(Args...) {
  return &InDriver<Raw, R, Args...>;
}

// Sets command `name` from the loader's pointer (null stays null).
#define STATICLM_VK_SET(name, pointer) \
  raw_##name = (pointer);              \
  name = raw_##name != nullptr ? ThunkFor<raw_##name>(raw_##name) : nullptr;

// The loader's ABI name (the unversioned libvulkan.so comes only with the development package).
constexpr const char* kDefaultLoader = "libvulkan.so.1";

// Serialises loading; the pointers are written only under it and only until loaded.
std::mutex g_load_mutex;
void* g_library = nullptr;  // the open loader, once LoadVulkan has succeeded
bool g_instance_commands = false;

const char* DlError() {
  const char* e = dlerror();
  return e != nullptr ? e : "unknown error";
}

void ClearGlobalCommands() {
  STATICLM_VK_SET(vkGetInstanceProcAddr, nullptr);
#define STATICLM_VK_CLEAR(name) STATICLM_VK_SET(name, nullptr);
  STATICLM_VK_GLOBAL_COMMANDS(STATICLM_VK_CLEAR)
#undef STATICLM_VK_CLEAR
}

// Resolves the global commands from the loader just opened as `path`.
Status ResolveGlobalCommands(void* library, const char* path) {
  // Layers and drivers export entry points of the same names but expect to be called by a
  // loader (a layer's vkCreateInstance reads the loader's chain from pNext and crashes
  // without it), so they are told apart by the negotiation entry point only they export.
  if (dlsym(library, "vkNegotiateLoaderLayerInterfaceVersion") != nullptr) {
    return Status::Error(StatusCode::kUnsupported,
                         "no Vulkan loader: %s is a Vulkan layer, not the loader", path);
  }
  if (dlsym(library, "vk_icdNegotiateLoaderICDInterfaceVersion") != nullptr ||
      dlsym(library, "vk_icdGetInstanceProcAddr") != nullptr) {
    return Status::Error(StatusCode::kUnsupported,
                         "no Vulkan loader: %s is a Vulkan driver, not the loader", path);
  }
  STATICLM_VK_SET(vkGetInstanceProcAddr, reinterpret_cast<PFN_vkGetInstanceProcAddr>(
                                             dlsym(library, "vkGetInstanceProcAddr")));
  if (vkGetInstanceProcAddr == nullptr) {
    return Status::Error(StatusCode::kUnsupported,
                         "no Vulkan loader: %s is not one (it has no vkGetInstanceProcAddr)", path);
  }
#define STATICLM_VK_RESOLVE(name)                                                              \
  STATICLM_VK_SET(name,                                                                        \
                  reinterpret_cast<PFN_##name>(vkGetInstanceProcAddr(VK_NULL_HANDLE, #name))); \
  if (name == nullptr) {                                                                       \
    return Status::Error(StatusCode::kUnsupported, "no Vulkan loader: %s does not provide %s", \
                         path, #name);                                                         \
  }
  STATICLM_VK_GLOBAL_COMMANDS(STATICLM_VK_RESOLVE)
#undef STATICLM_VK_RESOLVE
  return Status::Ok();
}

}  // namespace

Status LoadVulkan() {
  std::lock_guard<std::mutex> lock(g_load_mutex);
  if (g_library != nullptr) return Status::Ok();
  const char* env = std::getenv(kVulkanLoaderEnv);
  const bool from_env = env != nullptr && env[0] != '\0';
  const char* path = from_env ? env : kDefaultLoader;
  void* library = nullptr;
  {
    driver_scope::Scope scope;  // the loader's constructors are driver code too
    library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  }
  if (library == nullptr) {
    return Status::Error(StatusCode::kUnsupported,
                         "no Vulkan loader: %s%s could not be opened (%s)", path,
                         from_env ? " (from STATICLM_VULKAN_LOADER)" : "", DlError());
  }
  Status s = ResolveGlobalCommands(library, path);
  if (!s.ok()) {
    ClearGlobalCommands();
    dlclose(library);
    return s;
  }
  g_library = library;
  return Status::Ok();
}

Status LoadInstanceCommands(VkInstance instance) {
  std::lock_guard<std::mutex> lock(g_load_mutex);
  if (g_instance_commands) return Status::Ok();
  if (g_library == nullptr) {
    return Status::Error(StatusCode::kInternal, "Vulkan commands resolved before LoadVulkan");
  }
  // A pointer once set is never rewritten: a context whose load failed half way may still
  // call vkDestroyInstance through it.
#define STATICLM_VK_RESOLVE(name)                                                                \
  if (name == nullptr) {                                                                         \
    STATICLM_VK_SET(name, reinterpret_cast<PFN_##name>(vkGetInstanceProcAddr(instance, #name))); \
  }                                                                                              \
  if (name == nullptr) {                                                                         \
    return Status::Error(StatusCode::kUnsupported, "the Vulkan loader does not provide %s",      \
                         #name);                                                                 \
  }
  STATICLM_VK_INSTANCE_COMMANDS(STATICLM_VK_RESOLVE)
  STATICLM_VK_DEVICE_COMMANDS(STATICLM_VK_RESOLVE)
#undef STATICLM_VK_RESOLVE
  g_instance_commands = true;
  return Status::Ok();
}

Status LoadDeviceCommands(VkDevice device) {
#define STATICLM_VK_CHECK(name)                                                             \
  if (vkGetDeviceProcAddr(device, #name) == nullptr) {                                      \
    return Status::Error(StatusCode::kUnsupported, "the Vulkan device does not provide %s", \
                         #name);                                                            \
  }
  STATICLM_VK_DEVICE_COMMANDS(STATICLM_VK_CHECK)
#undef STATICLM_VK_CHECK
  return Status::Ok();
}

}  // namespace staticlm::vulkan
