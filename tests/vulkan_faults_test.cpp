// Vulkan failures a real device can have but lavapipe will not produce on demand (issue 5):
// out of device memory at init and the device lost during a step. Each must be a clear status,
// never a crash, a leak or a hang.
//
// How they are injected: vk_api.h keeps every Vulkan command in a process-wide pointer named
// after it, resolved by the first Prepare of the process and never rewritten afterwards
// (vk_loader.cpp). So once one backend has prepared, a test swaps a pointer for a wrapper that
// calls the real command or returns the error instead, and puts the real one back when done.
// The failure enters at the Vulkan call boundary and takes exactly the path a real one takes;
// that is why the product has no test hook for it (no VulkanTestOptions field, no second path
// in the allocation code): the least intrusive design is none. The wrappers also count the
// objects created and destroyed, so "nothing half-created is left" is checked directly, not
// only by ASan (the sanitizer build runs this test too).
//
// Out of memory: for each vkAllocateMemory a Prepare makes (weights uploaded, KV cache, arena,
// io, RoPE rows, scratch, placeholder, step block, sampling block), that one fails: Prepare
// says which buffer and how many bytes, stops there, and destroying the backend frees
// everything; then a new backend on the same device prepares and steps correctly. A refused
// weight import falls back to the upload. Through the C API the context is not created (one
// line) and "auto" falls back to the CPU with a note.
//
// Device lost: in a decode-shaped and a prefill-shaped plan, at the submit or at the wait,
// and while sampling on the device: the call says "Vulkan device lost", and every later step,
// fetch, sample, and read or write of device memory says the same at once without submitting
// again; destruction (whose vkDeviceWaitIdle then reports the loss too) neither crashes nor
// hangs. Through the C API on the real model: decode and prefill fail with the message, the
// context is destroyed, a session saved before the loss loads into a fresh CPU context and
// continues (saving again after the loss fails and leaves the saved file intact). A step whose
// fence does not signal in time (VK_TIMEOUT) makes the device unusable the same way: its fence
// is still pending, so nothing is submitted again.
//
// The CLI cannot inject (no environment variable for it in the product, by design), so it is
// checked with a Prepare failure it can reach: a device index that does not exist (64).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/staticlm.h"
#include "tests/support/cli_runner.h"
#include "tests/support/context_helpers.h"
#include "tests/support/temp_path.h"
#include "tests/vulkan_test_support.h"
#if defined(STATICLM_HAVE_VULKAN)
#include "backends/vulkan/vk_api.h"
#include "backends/vulkan/vulkan_backend.h"
#endif

namespace staticlm::vktest {
namespace {

#if defined(STATICLM_HAVE_VULKAN)

// ---- The wrappers --------------------------------------------------------------------------

// kTimedOut: the wait returns VK_TIMEOUT (a hung device) after the work really ran.
enum class Loss { kNone, kAtSubmit, kAtWait, kTimedOut };

struct Faults {
  int fail_allocation_at = 0;      // the N-th vkAllocateMemory (from 1) fails; 0: none does
  int fail_allocations_from = 0;   // every vkAllocateMemory from the N-th fails; 0: none
  Loss loss = Loss::kNone;         // where a step reports VK_ERROR_DEVICE_LOST
  bool idle_reports_loss = false;  // vkDeviceWaitIdle too (as it does once the device is lost)

  int allocations = 0;                  // vkAllocateMemory calls
  std::vector<uint64_t> sizes;          // the allocationSize of each
  int submits = 0;                      // vkQueueSubmit calls
  std::vector<uint64_t> wait_timeouts;  // the timeout of each vkWaitForFences
  long live_memory = 0, live_buffers = 0, live_fences = 0, live_pools = 0;

  PFN_vkAllocateMemory allocate = nullptr;
  PFN_vkFreeMemory free_memory = nullptr;
  PFN_vkCreateBuffer create_buffer = nullptr;
  PFN_vkDestroyBuffer destroy_buffer = nullptr;
  PFN_vkCreateFence create_fence = nullptr;
  PFN_vkDestroyFence destroy_fence = nullptr;
  PFN_vkCreateCommandPool create_command_pool = nullptr;
  PFN_vkDestroyCommandPool destroy_command_pool = nullptr;
  PFN_vkCreateDescriptorPool create_descriptor_pool = nullptr;
  PFN_vkDestroyDescriptorPool destroy_descriptor_pool = nullptr;
  PFN_vkQueueSubmit submit = nullptr;
  PFN_vkWaitForFences wait = nullptr;
  PFN_vkDeviceWaitIdle wait_idle = nullptr;
};
Faults g;

VKAPI_ATTR VkResult VKAPI_CALL AllocateMemory(VkDevice d, const VkMemoryAllocateInfo* info,
                                              const VkAllocationCallbacks* a, VkDeviceMemory* m) {
  const int call = ++g.allocations;
  g.sizes.push_back(info->allocationSize);
  if (call == g.fail_allocation_at ||
      (g.fail_allocations_from > 0 && call >= g.fail_allocations_from)) {
    return VK_ERROR_OUT_OF_DEVICE_MEMORY;
  }
  VkResult r = g.allocate(d, info, a, m);
  if (r == VK_SUCCESS) ++g.live_memory;
  return r;
}

VKAPI_ATTR void VKAPI_CALL FreeMemory(VkDevice d, VkDeviceMemory m,
                                      const VkAllocationCallbacks* a) {
  if (m != VK_NULL_HANDLE) --g.live_memory;
  g.free_memory(d, m, a);
}

// A create command that counts the objects it made in `Count`, calling the real one kept in
// `Real`; and the matching destroy.
template <auto Real, long Faults::*Count, typename Info, typename Handle>
VKAPI_ATTR VkResult VKAPI_CALL CountedCreate(VkDevice d, const Info* info,
                                             const VkAllocationCallbacks* a, Handle* h) {
  VkResult r = (g.*Real)(d, info, a, h);
  if (r == VK_SUCCESS) ++(g.*Count);
  return r;
}

template <auto Real, long Faults::*Count, typename Handle>
VKAPI_ATTR void VKAPI_CALL CountedDestroy(VkDevice d, Handle h, const VkAllocationCallbacks* a) {
  if (h != VK_NULL_HANDLE) --(g.*Count);
  (g.*Real)(d, h, a);
}

// Lost at the submit: nothing reaches the queue and the fence stays unsignalled.
VKAPI_ATTR VkResult VKAPI_CALL QueueSubmit(VkQueue q, uint32_t n, const VkSubmitInfo* s,
                                           VkFence f) {
  ++g.submits;
  if (g.loss == Loss::kAtSubmit) return VK_ERROR_DEVICE_LOST;
  return g.submit(q, n, s, f);
}

// Lost at the wait: the work really ran and signalled the fence, which nobody resets, so a
// backend that submitted again with it would make an invalid call.
VKAPI_ATTR VkResult VKAPI_CALL WaitForFences(VkDevice d, uint32_t n, const VkFence* f, VkBool32 all,
                                             uint64_t timeout) {
  g.wait_timeouts.push_back(timeout);
  VkResult r = g.wait(d, n, f, all, timeout);
  if (g.loss == Loss::kTimedOut) return VK_TIMEOUT;
  return g.loss == Loss::kAtWait ? VK_ERROR_DEVICE_LOST : r;
}

VKAPI_ATTR VkResult VKAPI_CALL DeviceWaitIdle(VkDevice d) {
  VkResult r = g.wait_idle(d);
  return g.idle_reports_loss ? VK_ERROR_DEVICE_LOST : r;
}

// Installs the wrappers for its lifetime (the pointers must be loaded: see VulkanUsable), with
// every setting and count reset.
class Injector {
 public:
  Injector() {
    g = Faults{};
    Swap(&g.allocate, &vulkan::vkAllocateMemory, AllocateMemory);
    Swap(&g.free_memory, &vulkan::vkFreeMemory, FreeMemory);
    Swap(
        &g.create_buffer, &vulkan::vkCreateBuffer,
        CountedCreate<&Faults::create_buffer, &Faults::live_buffers, VkBufferCreateInfo, VkBuffer>);
    Swap(&g.destroy_buffer, &vulkan::vkDestroyBuffer,
         CountedDestroy<&Faults::destroy_buffer, &Faults::live_buffers, VkBuffer>);
    Swap(&g.create_fence, &vulkan::vkCreateFence,
         CountedCreate<&Faults::create_fence, &Faults::live_fences, VkFenceCreateInfo, VkFence>);
    Swap(&g.destroy_fence, &vulkan::vkDestroyFence,
         CountedDestroy<&Faults::destroy_fence, &Faults::live_fences, VkFence>);
    Swap(&g.create_command_pool, &vulkan::vkCreateCommandPool,
         CountedCreate<&Faults::create_command_pool, &Faults::live_pools, VkCommandPoolCreateInfo,
                       VkCommandPool>);
    Swap(&g.destroy_command_pool, &vulkan::vkDestroyCommandPool,
         CountedDestroy<&Faults::destroy_command_pool, &Faults::live_pools, VkCommandPool>);
    Swap(&g.create_descriptor_pool, &vulkan::vkCreateDescriptorPool,
         CountedCreate<&Faults::create_descriptor_pool, &Faults::live_pools,
                       VkDescriptorPoolCreateInfo, VkDescriptorPool>);
    Swap(&g.destroy_descriptor_pool, &vulkan::vkDestroyDescriptorPool,
         CountedDestroy<&Faults::destroy_descriptor_pool, &Faults::live_pools, VkDescriptorPool>);
    Swap(&g.submit, &vulkan::vkQueueSubmit, QueueSubmit);
    Swap(&g.wait, &vulkan::vkWaitForFences, WaitForFences);
    Swap(&g.wait_idle, &vulkan::vkDeviceWaitIdle, DeviceWaitIdle);
  }
  ~Injector() {
    vulkan::vkAllocateMemory = g.allocate;
    vulkan::vkFreeMemory = g.free_memory;
    vulkan::vkCreateBuffer = g.create_buffer;
    vulkan::vkDestroyBuffer = g.destroy_buffer;
    vulkan::vkCreateFence = g.create_fence;
    vulkan::vkDestroyFence = g.destroy_fence;
    vulkan::vkCreateCommandPool = g.create_command_pool;
    vulkan::vkDestroyCommandPool = g.destroy_command_pool;
    vulkan::vkCreateDescriptorPool = g.create_descriptor_pool;
    vulkan::vkDestroyDescriptorPool = g.destroy_descriptor_pool;
    vulkan::vkQueueSubmit = g.submit;
    vulkan::vkWaitForFences = g.wait;
    vulkan::vkDeviceWaitIdle = g.wait_idle;
  }
  Injector(const Injector&) = delete;
  Injector& operator=(const Injector&) = delete;

 private:
  template <typename F>
  static void Swap(F* real, F* global, F wrapper) {
    EXPECT_NE(*global, nullptr) << "the Vulkan commands are not loaded yet";
    *real = *global;
    *global = wrapper;
  }
};

void ExpectNothingLeft(const char* when) {
  EXPECT_EQ(g.live_memory, 0) << when << ": device memory left allocated";
  EXPECT_EQ(g.live_buffers, 0) << when << ": buffers left";
  EXPECT_EQ(g.live_fences, 0) << when << ": fences left";
  EXPECT_EQ(g.live_pools, 0) << when << ": command or descriptor pools left";
}

// ---- A small plan --------------------------------------------------------------------------

constexpr int32_t kTableRows = 8;
constexpr int32_t kVocab = 96;

// A plan whose step writes each token's row of an f32 table as its logits row (an exact
// copy), so a step's result is known; KV cache and arena are given sizes of their own so each
// allocation is distinct.
struct Rig {
  PlanHarness h;
  uint32_t table = 0;
  std::vector<float> values;
  std::unique_ptr<vulkan::VulkanBackend> vk;

  explicit Rig(int32_t chunk) : h(chunk) {
    table = h.Tensor(BufferId::kWeights, DType::kF32, {kTableRows, kVocab}, "table");
    h.plan.logits_tensor = h.Tensor(BufferId::kIo, DType::kF32, {chunk, kVocab}, "logits");
    h.AddOp(OpKind::kEmbed, {table, h.plan.tokens_tensor}, {h.plan.logits_tensor}, OpParams{});
    h.plan.buffer_bytes[static_cast<int>(BufferId::kKvCache)] = 4096;
    h.plan.buffer_bytes[static_cast<int>(BufferId::kArena)] = 2048;
    h.Allocate();
    values = RandomFloats(size_t(kTableRows) * kVocab, 7);
    PutFloats(h, table, values);
  }

  Status Prepare(bool upload_weights) {
    BackendOptions options;
    options.logits_on_request = true;
    vulkan::VulkanTestOptions test;
    test.validation = true;
    test.no_host_import = upload_weights;
    vk = std::make_unique<vulkan::VulkanBackend>(options, test);
    const Plan* plans[1] = {&h.plan};
    return vk->Prepare(plans, 1, h.Binding());
  }

  // One step of `n` tokens (table rows 3, 4, ...); checks nothing.
  Status Step(int32_t n) {
    std::vector<int32_t> tokens(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) tokens[size_t(i)] = (3 + i) % kTableRows;
    std::memcpy(h.Data(h.plan.tokens_tensor), tokens.data(), tokens.size() * 4);
    return vk->Execute(0, {n, 0});
  }

  // A step, then its first logits row fetched and compared with table row 3, and a greedy
  // sample on the device compared with that row's argmax.
  void ExpectWorkingStep(int32_t n) {
    Status s = Step(n);
    ASSERT_TRUE(s.ok()) << s.message();
    s = vk->FetchLogits(0, 0, 1);
    ASSERT_TRUE(s.ok()) << s.message();
    const float* row = values.data() + 3 * kVocab;
    EXPECT_EQ(std::memcmp(h.Data(h.plan.logits_tensor), row, kVocab * sizeof(float)), 0);
    int32_t token = -1;
    s = vk->SampleOnDevice(0, 0, DeviceSampling{}, &token);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(token, int32_t(std::max_element(row, row + kVocab) - row));
  }
};

// Prepares (and destroys) one backend, which loads the Vulkan commands for the process; false
// with the reason when this machine has no Vulkan loader or device.
bool VulkanUsable(std::string* why) {
  Rig rig(1);
  Status s = rig.Prepare(false);
  if (!s.ok() && std::strstr(s.message(), "no Vulkan") != nullptr) {
    *why = s.message();
    return false;
  }
  EXPECT_TRUE(s.ok()) << s.message();
  return s.ok();
}

#define SKIP_WITHOUT_VULKAN()                       \
  do {                                              \
    std::string why_;                               \
    if (!VulkanUsable(&why_)) GTEST_SKIP() << why_; \
  } while (0)

bool IsDeviceLost(const Status& s) {
  return s.code() == StatusCode::kInternal && std::strcmp(s.message(), "Vulkan device lost") == 0;
}

bool IsTimedOut(const Status& s) {
  return s.code() == StatusCode::kInternal && std::strstr(s.message(), "timed out") != nullptr;
}

// ---- Out of device memory at init ----------------------------------------------------------

TEST(VulkanFaultsTest, OutOfDeviceMemoryAtEachAllocationOfPrepare) {
  SKIP_WITHOUT_VULKAN();
  Injector injector;
  int n = 0;
  {
    Rig rig(1);
    Status s = rig.Prepare(true);
    ASSERT_TRUE(s.ok()) << s.message();
    n = g.allocations;
  }
  ExpectNothingLeft("after a good Prepare");
  // weights, KV cache, arena, io, RoPE rows, scratch, placeholder, step block, sampling block
  ASSERT_GE(n, 9);
  std::set<std::string> names;
  for (int k = 1; k <= n; ++k) {
    SCOPED_TRACE("allocation " + std::to_string(k));
    g.allocations = 0;
    g.sizes.clear();
    g.fail_allocation_at = k;
    {
      Rig rig(1);
      Status s = rig.Prepare(true);
      std::printf("allocation %d of %d failing: %s\n", k, n, s.message());
      ASSERT_FALSE(s.ok());
      EXPECT_EQ(s.code(), StatusCode::kOutOfMemory);
      EXPECT_EQ(g.allocations, k) << "Prepare went on after the failure";
      const std::string message = s.message();
      const std::string prefix = "out of device memory: ";
      const size_t needs = message.find(" needs ");
      ASSERT_EQ(message.rfind(prefix, 0), 0u) << message;
      ASSERT_NE(needs, std::string::npos) << message;
      names.insert(message.substr(prefix.size(), needs - prefix.size()));
      // The bytes named are those the failed allocation asked for.
      const std::string bytes = std::to_string(g.sizes[size_t(k - 1)]) + " bytes";
      EXPECT_EQ(message.compare(needs + 7, bytes.size(), bytes), 0) << message << " vs " << bytes;
      EXPECT_EQ(message.find('\n'), std::string::npos);
      // The half-prepared backend refuses to run; destroying it frees everything.
      EXPECT_FALSE(rig.Step(1).ok());
      EXPECT_FALSE(rig.vk->FetchLogits(0, 0, 1).ok());
      int32_t token = 0;
      EXPECT_FALSE(rig.vk->SampleOnDevice(0, 0, DeviceSampling{}, &token).ok());
    }
    ExpectNothingLeft("after a failed Prepare");
  }
  EXPECT_EQ(names.size(), size_t(n)) << "two allocations have the same name";
  for (const char* expected : {"the weights", "the KV cache", "the arena", "the io buffer",
                               "the step parameters", "the sampling parameters"}) {
    EXPECT_EQ(names.count(expected), 1u) << expected << " was never named";
  }
  // The same device then prepares and runs a new backend.
  g.fail_allocation_at = 0;
  {
    Rig rig(1);
    Status s = rig.Prepare(true);
    ASSERT_TRUE(s.ok()) << s.message();
    rig.ExpectWorkingStep(1);
    EXPECT_EQ(rig.vk->validation_messages(), 0u);
  }
  ExpectNothingLeft("at the end");
}

// ---- Waits -------------------------------------------------------------------------------

// A recording's first run may include the driver compiling its shaders (lavapipe compiles a
// variant at its first dispatch), so its wait is bounded by ten minutes; every later run of it
// by the step's (120 s) or the sampling's (10 s) bound, past which the device counts as hung.
TEST(VulkanFaultsTest, FirstRunOfEachRecordingWaitsLongerThanTheSteadyBound) {
  SKIP_WITHOUT_VULKAN();
  Injector injector;
  {
    Rig rig(1);
    Status s = rig.Prepare(true);
    ASSERT_TRUE(s.ok()) << s.message();
    g.wait_timeouts.clear();
    for (int i = 0; i < 2; ++i) {
      s = rig.Step(1);
      ASSERT_TRUE(s.ok()) << s.message();
    }
    int32_t token = -1;
    for (int i = 0; i < 2; ++i) {
      s = rig.vk->SampleOnDevice(0, 0, DeviceSampling{}, &token);
      ASSERT_TRUE(s.ok()) << s.message();
    }
    constexpr uint64_t kSecond = 1000ull * 1000 * 1000;
    ASSERT_EQ(g.wait_timeouts.size(), 4u);
    EXPECT_EQ(g.wait_timeouts[0], 600 * kSecond);  // the step's first run
    EXPECT_EQ(g.wait_timeouts[1], 120 * kSecond);
    EXPECT_EQ(g.wait_timeouts[2], 600 * kSecond);  // the greedy sampler's first run
    EXPECT_EQ(g.wait_timeouts[3], 10 * kSecond);
    (void)token;
  }
  ExpectNothingLeft("at the end");
}

// ---- Device lost during a step -------------------------------------------------------------

// After the loss (or a timed-out step) every call that would submit or touch device memory
// says so at once, with the first failure's status.
void ExpectStaysLost(Rig& rig, int32_t chunk, bool (*is_failure)(const Status&) = IsDeviceLost) {
  const int submits = g.submits;
  Status s = rig.Step(chunk);
  EXPECT_TRUE(is_failure(s)) << s.message();
  EXPECT_TRUE(is_failure(rig.vk->FetchLogits(0, 0, 1)));
  int32_t token = -7;
  EXPECT_TRUE(is_failure(rig.vk->SampleOnDevice(0, 0, DeviceSampling{}, &token)));
  EXPECT_EQ(token, -7);
  uint8_t bytes[64] = {0};
  EXPECT_TRUE(is_failure(rig.vk->ReadBuffer(BufferId::kKvCache, 0, sizeof(bytes), bytes)));
  EXPECT_TRUE(is_failure(rig.vk->WriteBuffer(BufferId::kArena, 0, sizeof(bytes), bytes)));
  EXPECT_TRUE(is_failure(rig.vk->CopyWithinBuffer(BufferId::kKvCache, 0, 64, sizeof(bytes))));
  EXPECT_EQ(g.submits, submits) << "submitted to an unusable device";
}

struct LossCase {
  int32_t chunk;  // 1: a decode plan's shape; 4: a prefill plan's
  Loss loss;
};

class VulkanDeviceLostTest : public ::testing::TestWithParam<LossCase> {};

TEST_P(VulkanDeviceLostTest, StepFailsAndEverythingAfterSaysSo) {
  SKIP_WITHOUT_VULKAN();
  const LossCase c = GetParam();
  Injector injector;
  {
    Rig rig(c.chunk);
    Status s = rig.Prepare(true);
    ASSERT_TRUE(s.ok()) << s.message();
    rig.ExpectWorkingStep(c.chunk);
    g.loss = c.loss;
    g.idle_reports_loss = true;
    const int submits = g.submits;
    s = rig.Step(c.chunk);
    auto* is_failure = c.loss == Loss::kTimedOut ? IsTimedOut : IsDeviceLost;
    EXPECT_TRUE(is_failure(s)) << s.message();
    EXPECT_EQ(g.submits, submits + 1);
    // The injection ends; a backend that forgot the failure would now run the step again
    // (after a timeout, with its fence still pending or signalled: an invalid submit).
    g.loss = Loss::kNone;
    ExpectStaysLost(rig, c.chunk, is_failure);
    EXPECT_EQ(rig.vk->validation_messages(), 0u);
  }  // destroyed with vkDeviceWaitIdle reporting the loss
  ExpectNothingLeft("after destroying a lost backend");
}

INSTANTIATE_TEST_SUITE_P(Cases, VulkanDeviceLostTest,
                         ::testing::Values(LossCase{1, Loss::kAtSubmit}, LossCase{1, Loss::kAtWait},
                                           LossCase{4, Loss::kAtSubmit}, LossCase{4, Loss::kAtWait},
                                           LossCase{1, Loss::kTimedOut}),
                         [](const ::testing::TestParamInfo<LossCase>& info) {
                           const Loss l = info.param.loss;
                           return std::string(info.param.chunk == 1 ? "Decode" : "Prefill") +
                                  (l == Loss::kAtSubmit ? "AtSubmit"
                                   : l == Loss::kAtWait ? "AtWait"
                                                        : "TimedOut");
                         });

TEST(VulkanFaultsTest, DeviceLostWhileSamplingOnTheDevice) {
  SKIP_WITHOUT_VULKAN();
  for (Loss loss : {Loss::kAtSubmit, Loss::kAtWait}) {
    Injector injector;
    {
      Rig rig(1);
      Status s = rig.Prepare(true);
      ASSERT_TRUE(s.ok()) << s.message();
      rig.ExpectWorkingStep(1);
      ASSERT_TRUE(rig.Step(1).ok());
      g.loss = loss;
      g.idle_reports_loss = true;
      int32_t token = -7;
      s = rig.vk->SampleOnDevice(0, 0, DeviceSampling{}, &token);
      EXPECT_TRUE(IsDeviceLost(s)) << s.message();
      EXPECT_EQ(token, -7);
      g.loss = Loss::kNone;
      ExpectStaysLost(rig, 1);
    }
    ExpectNothingLeft("after destroying a backend lost while sampling");
  }
}

// ---- Through the C API, on the real model --------------------------------------------------

using test::ContextPtr;

staticlm_limits Limits(const char* backend) {
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.max_context = 64;
  limits.prefill_chunk = 8;
  limits.backend = backend;
  limits.pipeline_cache_path = "";
  return limits;
}

int32_t Greedy(staticlm_context* ctx) {
  staticlm_sampler greedy;
  staticlm_sampler_default(&greedy);
  greedy.temperature = 0.0f;
  int32_t token = -1;
  EXPECT_EQ(staticlm_sample(ctx, &greedy, &token), STATICLM_OK) << staticlm_last_error(ctx);
  return token;
}

void ExpectLost(staticlm_status status, staticlm_context* ctx, const char* call) {
  EXPECT_EQ(status, STATICLM_INTERNAL) << call;
  EXPECT_STREQ(staticlm_last_error(ctx), "Vulkan device lost") << call;
}

std::vector<int32_t> History(staticlm_context* ctx) {
  size_t n = 0;
  const int32_t* h = staticlm_history(ctx, &n);
  return std::vector<int32_t>(h, h + n);
}

TEST(VulkanFaultsTest, CapiDecodeAfterTheLossFailsAndTheSavedSessionLoadsOnTheCpu) {
  SKIP_WITHOUT_VULKAN();
  const std::string path = test::TempPath("faults.session");
  std::vector<int32_t> prompt, saved_history;
  std::vector<float> saved_logits;
  int32_t next = -1;
  {
    Injector injector;
    {
      ContextPtr gpu = test::CreateContext(STATICLM_DEFAULT_MODEL, Limits("vulkan"));
      ASSERT_NE(gpu, nullptr);
      ASSERT_STREQ(staticlm_backend_name(gpu.get()), "vulkan");
      prompt = test::Tokens(gpu.get(), "The capital of France is");
      ASSERT_EQ(staticlm_prefill(gpu.get(), prompt.data(), prompt.size()), STATICLM_OK);
      next = Greedy(gpu.get());
      ASSERT_EQ(staticlm_session_save(gpu.get(), path.c_str()), STATICLM_OK)
          << staticlm_last_error(gpu.get());
      saved_logits = test::Logits(gpu.get());
      saved_history = History(gpu.get());
      ASSERT_EQ(staticlm_decode(gpu.get(), next), STATICLM_OK);
      const int32_t position = staticlm_position(gpu.get());

      g.loss = Loss::kAtSubmit;
      g.idle_reports_loss = true;
      ExpectLost(staticlm_decode(gpu.get(), next), gpu.get(), "decode");
      g.loss = Loss::kNone;
      const int submits = g.submits;
      ExpectLost(staticlm_decode(gpu.get(), next), gpu.get(), "decode again");
      ExpectLost(staticlm_prefill(gpu.get(), prompt.data(), prompt.size()), gpu.get(), "prefill");
      staticlm_sampler greedy;
      staticlm_sampler_default(&greedy);
      greedy.temperature = 0.0f;
      int32_t token = -1;
      ExpectLost(staticlm_sample(gpu.get(), &greedy, &token), gpu.get(), "sample");
      // Saving now would write undefined device memory over the good file: refused.
      ExpectLost(staticlm_session_save(gpu.get(), path.c_str()), gpu.get(), "session save");
      EXPECT_EQ(g.submits, submits) << "submitted to a lost device";
      EXPECT_EQ(staticlm_position(gpu.get()), position) << "a failed step moved the position";
    }  // destroyed after the loss
    ExpectNothingLeft("after destroying the lost context");
  }
  // The session saved before the loss continues on the CPU.
  ContextPtr cpu = test::CreateContext(STATICLM_DEFAULT_MODEL, Limits("cpu"));
  ASSERT_NE(cpu, nullptr);
  ASSERT_EQ(staticlm_session_load(cpu.get(), path.c_str()), STATICLM_OK)
      << staticlm_last_error(cpu.get());
  EXPECT_EQ(History(cpu.get()), saved_history);
  EXPECT_EQ(test::Logits(cpu.get()), saved_logits);
  ASSERT_EQ(staticlm_decode(cpu.get(), next), STATICLM_OK);
  // Against the CPU on its own: the parity tests' bound between the two backends.
  ContextPtr reference = test::CreateContext(STATICLM_DEFAULT_MODEL, Limits("cpu"));
  ASSERT_NE(reference, nullptr);
  ASSERT_EQ(staticlm_prefill(reference.get(), prompt.data(), prompt.size()), STATICLM_OK);
  ASSERT_EQ(staticlm_decode(reference.get(), next), STATICLM_OK);
  std::vector<float> got = test::Logits(cpu.get()), want = test::Logits(reference.get());
  ASSERT_EQ(got.size(), want.size());
  float largest = 0.0f;
  for (size_t i = 0; i < got.size(); ++i) largest = std::max(largest, std::fabs(got[i] - want[i]));
  std::printf("largest logit difference after the restored session: %g\n", largest);
  EXPECT_LT(largest, 0.1f);
  std::remove(path.c_str());
}

TEST(VulkanFaultsTest, CapiPrefillLostFailsAndLeavesTheConversation) {
  SKIP_WITHOUT_VULKAN();
  Injector injector;
  {
    ContextPtr gpu = test::CreateContext(STATICLM_DEFAULT_MODEL, Limits("vulkan"));
    ASSERT_NE(gpu, nullptr);
    std::vector<int32_t> prompt = test::Tokens(gpu.get(), "Name three colours of the rainbow.");
    ASSERT_GT(prompt.size(), 1u);
    g.loss = Loss::kAtWait;
    g.idle_reports_loss = true;
    ExpectLost(staticlm_prefill(gpu.get(), prompt.data(), prompt.size()), gpu.get(), "prefill");
    EXPECT_EQ(staticlm_position(gpu.get()), 0);
    g.loss = Loss::kNone;
    ExpectLost(staticlm_decode(gpu.get(), prompt[0]), gpu.get(), "decode");
    EXPECT_EQ(staticlm_logits(gpu.get()), nullptr);
  }
  ExpectNothingLeft("after destroying the lost context");
}

// The weights import (from the model's file mapping) is the first allocation; when the device
// refuses it the weights are uploaded instead and the context works.
TEST(VulkanFaultsTest, CapiRefusedWeightImportFallsBackToTheUpload) {
  SKIP_WITHOUT_VULKAN();
  Injector injector;
  g.fail_allocation_at = 1;
  std::string error;
  ContextPtr gpu = test::TryCreateContext(STATICLM_DEFAULT_MODEL, Limits("vulkan"), &error);
  if (gpu == nullptr && error.find("out of device memory: the weights") != std::string::npos) {
    GTEST_SKIP() << "this device imports no host memory, so nothing to refuse: " << error;
  }
  ASSERT_NE(gpu, nullptr) << error;
  const char* description = staticlm_backend_description(gpu.get());
  std::printf("%s\n", description);
  EXPECT_NE(std::strstr(description, "weights: uploaded (importing the host memory failed)"),
            nullptr)
      << description;
  std::vector<int32_t> prompt = test::Tokens(gpu.get(), "The capital of France is");
  ASSERT_EQ(staticlm_prefill(gpu.get(), prompt.data(), prompt.size()), STATICLM_OK)
      << staticlm_last_error(gpu.get());
  ContextPtr cpu = test::CreateContext(STATICLM_DEFAULT_MODEL, Limits("cpu"));
  ASSERT_NE(cpu, nullptr);
  ASSERT_EQ(staticlm_prefill(cpu.get(), prompt.data(), prompt.size()), STATICLM_OK);
  EXPECT_EQ(Greedy(gpu.get()), Greedy(cpu.get()));
}

TEST(VulkanFaultsTest, CapiOutOfDeviceMemoryAtCreateIsOneLineAndAutoFallsBack) {
  SKIP_WITHOUT_VULKAN();
  Injector injector;
  g.fail_allocations_from = 1;  // the device has no memory at all
  std::string error;
  ContextPtr gpu = test::TryCreateContext(STATICLM_DEFAULT_MODEL, Limits("vulkan"), &error);
  EXPECT_EQ(gpu, nullptr);
  std::printf("vulkan: %s\n", error.c_str());
  EXPECT_NE(error.find("out of device memory: the weights needs "), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  ExpectNothingLeft("after the failed create");

  ContextPtr any = test::CreateContext(STATICLM_DEFAULT_MODEL, Limits("auto"));
  ASSERT_NE(any, nullptr);
  EXPECT_STREQ(staticlm_backend_name(any.get()), "cpu");
  const std::string notes = staticlm_init_notes(any.get());
  std::printf("auto: %s\n", notes.c_str());
  EXPECT_NE(notes.find("vulkan: out of device memory: the weights needs "), std::string::npos)
      << notes;
  EXPECT_NE(notes.find("backend: cpu ("), std::string::npos) << notes;
  int32_t token = 42;
  EXPECT_EQ(staticlm_prefill(any.get(), &token, 1), STATICLM_OK);
  ExpectNothingLeft("after the fallback");
}

// ---- The CLI -------------------------------------------------------------------------------

TEST(VulkanFaultsTest, CliPrepareFailureIsOneLineAndAutoFallsBackWithOneNote) {
  SKIP_WITHOUT_VULKAN();
  // 64: the largest index the CLI accepts, and more devices than any test machine has.
  const std::string args = " --device 64 --max-tokens 2 --temperature 0 --prompt hi";
  test::ExpectCleanFailure("run --backend vulkan" + args, "Vulkan device 64 does not exist");
  test::CliResult r = test::RunCli("run --backend auto" + args);
  EXPECT_FALSE(r.signaled);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  ASSERT_NE(r.output.find("staticlm: note: backend: cpu ("), std::string::npos) << r.output;
  const std::string note = "vulkan: Vulkan device 64 does not exist";
  const size_t at = r.output.find(note);
  ASSERT_NE(at, std::string::npos) << r.output;
  EXPECT_EQ(r.output.find(note, at + 1), std::string::npos) << "said twice: " << r.output;
}

#else

TEST(VulkanFaultsTest, SkippedWithoutTheVulkanBackend) {
  GTEST_SKIP() << "built without the Vulkan backend";
}

#endif

}  // namespace
}  // namespace staticlm::vktest
