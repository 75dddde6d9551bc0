// Keeps the libraries a Vulkan loader opened for its drivers and layers loaded for the rest of
// the process, in sanitizer builds only.
//
// Why: the loader dlcloses a driver (lavapipe, and LLVM with it) when the last instance is
// destroyed. Mesa and LLVM keep caches reachable only from their own globals, which they do not
// free at unload; LeakSanitizer, which scans loaded modules' data for pointers when the process
// exits, then reports those blocks as leaked from "<unknown module>" (the code that allocated
// them is no longer mapped, so not even its name can be shown). Seen on AMD EPYC with Mesa 22.3
// (issue 19): 128 bytes to 6 KiB in every process that used Vulkan. Keeping the modules mapped
// leaves that state reachable, as it is in any process that has not unloaded its driver, and
// names the driver in the stack of anything it really leaks, so the suppressions beside
// KeepDriverModulesLoaded (vk_driver_modules.cpp) tell the driver's leaks from staticlm's. Release
// builds unload drivers as the loader decides.
#pragma once

namespace staticlm::vulkan {

// Marks every library loaded now as never to be unloaded (dlopen with RTLD_NODELETE |
// RTLD_NOLOAD). Call right after vkCreateInstance, when the loader has opened the driver. Init
// only (allocates); a no-op unless built with STATICLM_SANITIZE.
void KeepDriverModulesLoaded();

}  // namespace staticlm::vulkan
