// The sanitizer build's proof that leak checking is still on for staticlm's own code in a process
// that used Vulkan (issue 19). It makes the driver leak (a buffer left alive when its Vulkan
// device is destroyed: the driver never frees the buffer's host memory) and leaks 64 bytes from
// staticlm-side code, both on purpose. ctest (tests/CMakeLists.txt) passes only when
// LeakSanitizer reports exactly the 64 bytes, from this function, and lists the driver's leak
// apart as suppressed: the driver's leaks told from staticlm's, staticlm's still fatal.
#include <cstdio>

#include "backends/vulkan/vk_api.h"
#include "backends/vulkan/vk_device.h"

namespace {

__attribute__((noinline)) void StaticlmLeakOnPurpose() {
  char* volatile block = new char[64];
  block[0] = 1;
  block = nullptr;  // the only pointer is gone: a leak LeakSanitizer must report
}

}  // namespace

int main() {
  {
    staticlm::vulkan::DeviceContext dc;
    staticlm::vulkan::DeviceOptions options;
    staticlm::Status s = dc.Init(options);
    std::printf("leak canary: Vulkan context: %s\n", s.ok() ? "ok" : s.message());
    if (!s.ok()) return 1;
    VkBufferCreateInfo info{};
    info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    info.size = 256;
    info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    VkBuffer leaked = VK_NULL_HANDLE;  // never destroyed
    if (staticlm::vulkan::vkCreateBuffer(dc.device(), &info, dc.allocator(), &leaked) !=
        VK_SUCCESS) {
      return 1;
    }
  }
  StaticlmLeakOnPurpose();
  return 0;
}
