// Injected allocation failures at init (issue 17 part 3): staticlm_create on the tiny model with
// its n-th heap allocation refused, for every n from 1 to the number a normal creation makes.
// Each refusal must end in a clean status with a one-line message — or in a context that works,
// where the code has a fallback (std::stable_sort sorts in place when its buffer is refused) —
// with no crash and no leak: after staticlm_destroy every block allocated since the start is
// freed again (alloc_counter's live-block count is back at 0). Then the same process creates a
// context normally and it generates.
//
// The refusals come from platform/alloc_counter (malloc returns null, new throws bad_alloc), so
// this runs in the Release build only; sanitizer builds, where ASan owns malloc, skip it.
// Refused memory maps and Vulkan allocations are covered elsewhere: bad_input_table_test (a
// context too large for the address space) and vulkan_faults_test (each vkAllocateMemory).
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "platform/alloc_counter.h"
#include "staticlm/staticlm.h"
#include "tests/support/gguf_writer.h"
#include "tests/support/temp_path.h"

namespace staticlm::test {
namespace {

namespace counter = alloc_counter;

staticlm_limits TinyLimits(int threads) {
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.max_context = 64;
  limits.prefill_chunk = 8;
  limits.threads = threads;
  return limits;
}

// Creates and destroys a context with allocation `n` refused (0: none). Returns whether the
// creation succeeded; `allocations` gets how many staticlm made.
bool CreateWithAllocationRefused(const std::string& model, int threads, uint64_t n,
                                 uint64_t* allocations) {
  staticlm_limits limits = TinyLimits(threads);
  staticlm_context* ctx = nullptr;
  char error[256] = {0};
  counter::Start();
  counter::FailAllocation(n);
  staticlm_status s = staticlm_create(model.c_str(), &limits, &ctx, error, sizeof(error));
  if (s == STATICLM_OK) {
    const int32_t prompt[2] = {1, 2};
    EXPECT_EQ(staticlm_prefill(ctx, prompt, 2), STATICLM_OK) << staticlm_last_error(ctx);
  }
  counter::FailAllocation(0);
  staticlm_destroy(ctx);
  counter::Stop();
  *allocations = counter::Allocations();
  EXPECT_EQ(counter::LiveBlocks(), 0) << "allocation " << n << " refused: blocks left behind";
  if (s != STATICLM_OK) {
    EXPECT_EQ(s, STATICLM_OUT_OF_MEMORY) << "allocation " << n << ": " << error;
    EXPECT_NE(error[0], '\0') << "allocation " << n;
    EXPECT_EQ(std::string(error).find('\n'), std::string::npos) << error;
  }
  return s == STATICLM_OK;
}

TEST(InitFaultTest, EveryRefusedAllocationOfInitFailsCleanly) {
  if (!counter::Available()) GTEST_SKIP() << "sanitizer build: alloc_counter does not count";
  const std::string model = TempPath("init_fault.gguf");
  ASSERT_TRUE(WriteTinyLlama(model.c_str()).ok());
  for (int threads : {1, 2}) {
    // A first creation outside the count, so one-time lazy state (locale, thread-pool
    // symbols) is not taken for a leak.
    staticlm_limits limits = TinyLimits(threads);
    staticlm_context* warm = nullptr;
    ASSERT_EQ(staticlm_create(model.c_str(), &limits, &warm, nullptr, 0), STATICLM_OK);
    staticlm_destroy(warm);

    uint64_t total = 0;
    ASSERT_TRUE(CreateWithAllocationRefused(model, threads, 0, &total));
    ASSERT_GT(total, 10u) << "init should allocate more than this; is counting working?";
    int failed = 0;
    for (uint64_t n = 1; n <= total && !HasFailure(); ++n) {
      uint64_t ignored = 0;
      if (!CreateWithAllocationRefused(model, threads, n, &ignored)) ++failed;
    }
    ASSERT_FALSE(HasFailure()) << "threads " << threads;
    std::printf(
        "threads %d: init makes %llu heap allocations; refused one at a time, %d made "
        "creation fail cleanly and the rest were absorbed; nothing left allocated\n",
        threads, static_cast<unsigned long long>(total), failed);
    EXPECT_GT(failed, 0);
  }

  // The process is still sound: a context is created and generates.
  staticlm_limits limits = TinyLimits(1);
  staticlm_context* ctx = nullptr;
  ASSERT_EQ(staticlm_create(model.c_str(), &limits, &ctx, nullptr, 0), STATICLM_OK);
  const int32_t prompt[3] = {1, 2, 3};
  EXPECT_EQ(staticlm_prefill(ctx, prompt, 3), STATICLM_OK) << staticlm_last_error(ctx);
  staticlm_destroy(ctx);
  std::remove(model.c_str());
}

}  // namespace
}  // namespace staticlm::test
