#include "backends/vulkan/vk_driver_modules.h"

#if defined(STATICLM_SANITIZE)
#include <dlfcn.h>
#include <link.h>

#include <string>
#include <vector>
#endif

namespace staticlm::vulkan {

#if defined(STATICLM_SANITIZE)
namespace {

int CollectName(dl_phdr_info* info, size_t, void* names) {
  // The main program and the vDSO have no file name to open; they are never unloaded anyway.
  if (info->dlpi_name != nullptr && info->dlpi_name[0] == '/') {
    static_cast<std::vector<std::string>*>(names)->emplace_back(info->dlpi_name);
  }
  return 0;
}

}  // namespace

void KeepDriverModulesLoaded() {
  // Names first: dlopen may not be called from inside dl_iterate_phdr's callback.
  std::vector<std::string> names;
  dl_iterate_phdr(CollectName, &names);
  for (const std::string& name : names) {
    // RTLD_NOLOAD opens nothing new; RTLD_NODELETE sticks to the library once set, so the
    // reference taken here can be dropped at once.
    void* handle = dlopen(name.c_str(), RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
    if (handle != nullptr) dlclose(handle);
  }
}
#else
void KeepDriverModulesLoaded() {}
#endif

}  // namespace staticlm::vulkan

#if defined(STATICLM_SANITIZE)
// LeakSanitizer's built-in suppressions for every process of a sanitizer build that links the
// Vulkan backend (tests, the CLI, examples). A leak is suppressed when a frame of its allocation
// stack lies in one of these modules: the Vulkan loader, a driver (libvulkan_<name>.so; lavapipe
// compiles shaders with libLLVM) or a layer (the Khronos validation layer, whose synchronization
// validation leaks ~100 KiB per instance in 1.3.239). LeakSanitizer prints each suppression's
// count and bytes at exit ("Suppressions used"), which scripts/test totals as the driver's leaks,
// apart from staticlm's. staticlm's own code is linked statically, so no staticlm-only stack can
// match; a staticlm Vulkan object left undestroyed is allocated with the driver in the stack and
// so is caught instead by ProcessReleaseTally() (vk_counters.h), which the Vulkan tests check.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libvulkan.so\n"
         "leak:libvulkan_\n"
         "leak:libLLVM\n"
         "leak:libVkLayer_\n";
}
#endif
