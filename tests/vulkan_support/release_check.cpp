// Linked into every Vulkan test executable (tests/CMakeLists.txt): after the last test of the
// process, every DeviceContext made must have been destroyed, and the driver must hold none of
// the host allocations it made through staticlm's counting callbacks (vk_counters.h). This is
// the leak check for staticlm's Vulkan objects; LeakSanitizer checks the rest of staticlm's
// heap, and attributes the driver's own leaks to the driver (vk_driver_modules.h).
#include <gtest/gtest.h>

#include "backends/vulkan/vk_counters.h"

namespace {

class VulkanReleaseCheck : public ::testing::Environment {
 public:
  void TearDown() override {
    const staticlm::vulkan::VkReleaseTally& t = staticlm::vulkan::ProcessReleaseTally();
    std::printf(
        "vulkan release check: %llu contexts created, %llu destroyed, %llu driver host "
        "allocations unreleased\n",
        static_cast<unsigned long long>(t.contexts_created.load()),
        static_cast<unsigned long long>(t.contexts_destroyed.load()),
        static_cast<unsigned long long>(t.unreleased_host_allocations.load()));
    EXPECT_EQ(t.contexts_created.load(), t.contexts_destroyed.load())
        << "a Vulkan DeviceContext was never destroyed";
    EXPECT_EQ(t.unreleased_host_allocations.load(), 0u)
        << "the driver still holds host allocations made for staticlm's Vulkan objects: an "
           "object was not destroyed before its device";
  }
};

// Registered before main() runs; GoogleTest owns the environment.
::testing::Environment* const kReleaseCheck =
    ::testing::AddGlobalTestEnvironment(new VulkanReleaseCheck);

}  // namespace
