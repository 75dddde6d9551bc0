// The Vulkan loader is opened at run time: a machine without it (simulated by pointing
// STATICLM_VULKAN_LOADER at a file that does not exist) or with something else in its place (a
// library that is not a loader) gets a clear status from the C API and the CLI, "auto" falls
// back to the CPU saying why, and the built command does not need libvulkan to start.
//
// The in-process cases rely on no earlier case having loaded a real loader (a successful load
// lasts for the process, as the function pointers point into it): ctest runs each case in its
// own process, and the only cases that load a real loader do it in a child (the CLI).
#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "staticlm/staticlm.h"
#include "tests/support/cli_runner.h"
#include "tests/support/context_helpers.h"
#if defined(STATICLM_HAVE_VULKAN)
#include "backends/vulkan/vk_api.h"
#endif

namespace {

using staticlm::test::CliResult;
using staticlm::test::ExpectCleanFailure;
using staticlm::test::RunCli;
using staticlm::test::RunShell;

constexpr const char* kMissingLoader = "/nonexistent/libvulkan.so.1";
constexpr const char* kNotALoader = "libm.so.6";  // a library every Linux system has

// Points STATICLM_VULKAN_LOADER at `path` for one case (the CLI's children inherit it).
class LoaderEnv {
 public:
  explicit LoaderEnv(const char* path) { setenv("STATICLM_VULKAN_LOADER", path, 1); }
  ~LoaderEnv() { unsetenv("STATICLM_VULKAN_LOADER"); }
};

using Context = staticlm::test::ContextPtr;

Context Create(const char* backend, std::string* error_out) {
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.max_context = 64;
  limits.prefill_chunk = 8;
  limits.backend = backend;
  return staticlm::test::TryCreateContext(STATICLM_DEFAULT_MODEL, limits, error_out);
}

bool StartsWith(const std::string& s, const char* prefix) {
  return s.rfind(prefix, 0) == 0;
}

// Whether `inspect --devices` lists a CUDA device, when it succeeds without Vulkan and starts
// with "Vulkan devices: none (<why>)" instead of failing with "staticlm: <why>".
bool CudaDevicesListed() {
  char lines[4096], error[256];
  int n = 0;
  return staticlm_list_cuda_devices(lines, sizeof(lines), &n, error, sizeof(error)) == STATICLM_OK;
}

// `inspect --devices` without a usable loader says why in its first line.
void ExpectDevicesSayNoLoader(const char* expected) {
  if (!CudaDevicesListed()) {
    ExpectCleanFailure("inspect --devices", expected);
    return;
  }
  CliResult r = RunCli("inspect --devices");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(StartsWith(r.output, "Vulkan devices: none (")) << r.output;
  EXPECT_NE(r.output.find(expected), std::string::npos) << r.output;
}

#if defined(STATICLM_HAVE_VULKAN)
#define SKIP_WITHOUT_VULKAN_BUILD() (void)0
#else
#define SKIP_WITHOUT_VULKAN_BUILD() GTEST_SKIP() << "this build has no Vulkan backend"
#endif

#if defined(STATICLM_HAVE_VULKAN)
TEST(VulkanLoaderTest, MissingLoaderIsAStatusNamingWhatWasTried) {
  LoaderEnv env(kMissingLoader);
  staticlm::Status s = staticlm::vulkan::LoadVulkan();
  ASSERT_FALSE(s.ok());
  std::string message = s.message();
  std::printf("%s\n", message.c_str());
  EXPECT_TRUE(StartsWith(message, "no Vulkan loader")) << message;
  EXPECT_NE(message.find(kMissingLoader), std::string::npos) << message;
  EXPECT_NE(message.find("STATICLM_VULKAN_LOADER"), std::string::npos) << message;
  // Nothing was left half loaded: no command can be reached through a stale pointer.
  EXPECT_EQ(staticlm::vulkan::vkGetInstanceProcAddr, nullptr);
  EXPECT_EQ(staticlm::vulkan::vkCreateInstance, nullptr);
}

TEST(VulkanLoaderTest, ALibraryThatIsNotALoaderIsAStatus) {
  LoaderEnv env(kNotALoader);
  staticlm::Status s = staticlm::vulkan::LoadVulkan();
  ASSERT_FALSE(s.ok());
  std::string message = s.message();
  std::printf("%s\n", message.c_str());
  EXPECT_TRUE(StartsWith(message, "no Vulkan loader")) << message;
  EXPECT_NE(message.find(kNotALoader), std::string::npos) << message;
  EXPECT_NE(message.find("vkGetInstanceProcAddr"), std::string::npos) << message;
  EXPECT_EQ(staticlm::vulkan::vkGetInstanceProcAddr, nullptr);
}
#endif

TEST(VulkanLoaderTest, VulkanContextFailsWithoutALoader) {
  SKIP_WITHOUT_VULKAN_BUILD();
  for (const char* loader : {kMissingLoader, kNotALoader}) {
    LoaderEnv env(loader);
    std::string error;
    Context ctx = Create("vulkan", &error);
    EXPECT_EQ(ctx, nullptr) << loader;
    std::printf("%s: %s\n", loader, error.c_str());
    EXPECT_TRUE(StartsWith(error, "no Vulkan loader")) << error;
    EXPECT_NE(error.find(loader), std::string::npos) << error;
  }
}

TEST(VulkanLoaderTest, AutoFallsBackToTheCpuSayingWhy) {
  SKIP_WITHOUT_VULKAN_BUILD();
  LoaderEnv env(kMissingLoader);
  std::string error;
  Context ctx = Create("auto", &error);
  ASSERT_NE(ctx, nullptr) << error;
  EXPECT_STREQ(staticlm_backend_name(ctx.get()), "cpu");
  const char* notes = staticlm_init_notes(ctx.get());
  std::printf("init notes: %s\n", notes);
  EXPECT_NE(std::strstr(notes, "vulkan: no Vulkan loader"), nullptr) << notes;
  EXPECT_NE(std::strstr(notes, "backend: cpu ("), nullptr) << notes;
  int32_t token = 42;
  EXPECT_EQ(staticlm_prefill(ctx.get(), &token, 1), STATICLM_OK);
}

TEST(VulkanLoaderTest, CliFailsInOneLineWithoutALoader) {
  SKIP_WITHOUT_VULKAN_BUILD();
  for (const char* loader : {kMissingLoader, kNotALoader}) {
    LoaderEnv env(loader);
    ExpectCleanFailure("run --backend vulkan --max-tokens 2 --temperature 0 --prompt hi",
                       "no Vulkan loader");
    ExpectDevicesSayNoLoader("no Vulkan loader");
  }
}

TEST(VulkanLoaderTest, CliAutoRunsOnTheCpuWithOneNote) {
  SKIP_WITHOUT_VULKAN_BUILD();
  LoaderEnv env(kMissingLoader);
  CliResult r = RunCli("run --backend auto --max-tokens 2 --temperature 0 --prompt hi");
  EXPECT_FALSE(r.signaled);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  ASSERT_NE(r.output.find("staticlm: note: backend: cpu ("), std::string::npos) << r.output;
  const std::string note = "vulkan: no Vulkan loader";
  size_t at = r.output.find(note);
  ASSERT_NE(at, std::string::npos) << r.output;
  EXPECT_EQ(r.output.find(note, at + 1), std::string::npos) << "said twice: " << r.output;
}

// Layers and drivers export vkGetInstanceProcAddr too, but calling one as if it were the
// loader crashes (the validation layer's vkCreateInstance did): they are refused by name.
// Run in a child, so the layer is never loaded into this process.
TEST(VulkanLoaderTest, CliRefusesALayerOrDriverGivenAsTheLoader) {
  SKIP_WITHOUT_VULKAN_BUILD();
  struct Case {
    const char* library;
    const char* expected;
  };
  int tried = 0;
  for (Case c : {Case{"libVkLayer_khronos_validation.so", "is a Vulkan layer, not the loader"},
                 Case{"libvulkan_lvp.so", "is a Vulkan driver, not the loader"}}) {
    LoaderEnv env(c.library);
    CliResult r = RunCli("inspect --devices");
    if (r.output.find("could not be opened") != std::string::npos) continue;  // not installed
    ++tried;
    EXPECT_FALSE(r.signaled) << c.library;
    if (CudaDevicesListed()) {
      EXPECT_TRUE(StartsWith(r.output, "Vulkan devices: none (no Vulkan loader")) << r.output;
    } else {
      EXPECT_NE(r.exit_code, 0) << c.library;
      EXPECT_TRUE(StartsWith(r.output, "staticlm: no Vulkan loader")) << r.output;
    }
    EXPECT_NE(r.output.find(c.expected), std::string::npos) << r.output;
  }
  if (tried == 0) GTEST_SKIP() << "neither the validation layer nor lavapipe is installed";
}

// The full path of the loader the dynamic linker finds, or "" when there is none.
std::string SystemLoaderPath() {
  void* lib = dlopen("libvulkan.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (lib == nullptr) return "";
  link_map* map = nullptr;
  std::string path;
  if (dlinfo(lib, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr) path = map->l_name;
  dlclose(lib);
  return path;
}

// The variable names a library file: the system's loader given by its full path works.
TEST(VulkanLoaderTest, LoaderNamedByPathIsUsed) {
  SKIP_WITHOUT_VULKAN_BUILD();
  std::string path = SystemLoaderPath();
  if (path.empty()) GTEST_SKIP() << "no libvulkan.so.1 on this machine";
  LoaderEnv env(path.c_str());
  CliResult r = RunCli("inspect --devices");
  EXPECT_FALSE(r.signaled);
  if (r.exit_code != 0 && r.output.find("no Vulkan") != std::string::npos) {
    GTEST_SKIP() << "a loader but no device: " << r.output;
  }
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Vulkan devices ("), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("0: "), std::string::npos) << r.output;
}

// The command starts without libvulkan: the dynamic linker does not load it (ldd lists every
// library it would, direct or not).
TEST(VulkanLoaderTest, CommandDoesNotLinkLibvulkan) {
  if (RunShell("command -v ldd").exit_code != 0) GTEST_SKIP() << "ldd is not installed";
  CliResult r = RunShell("ldd " STATICLM_CLI);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_NE(r.output.find("libc.so"), std::string::npos) << "ldd listed nothing: " << r.output;
  EXPECT_EQ(r.output.find("libvulkan"), std::string::npos) << r.output;
}

}  // namespace
