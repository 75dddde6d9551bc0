// The op profile (staticlm_limits.profile_ops, staticlm_op_profile) with the default model, on
// the CPU backend (each op timed by the calling thread's clock), on the Vulkan backend (device
// timestamps after each dispatch; skipped without a Vulkan device) and on the CUDA backend (an
// event after each op; skipped without a CUDA build or device): the rows account for every
// op of the timed decode steps (each step runs the same plan, so every row's calls are a
// multiple of the steps), their time fits inside the steps' wall time, the products' weight
// bytes are those a step reads, timing changes no logit, and reading and resetting the profile
// allocate nothing. Without profile_ops the call is STATICLM_UNSUPPORTED; bad arguments are
// STATICLM_INVALID_ARGUMENT.
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "platform/alloc_counter.h"
#include "platform/clock.h"
#include "staticlm/staticlm.h"
#include "tests/support/context_helpers.h"

namespace {

using staticlm::test::ContextPtr;
namespace counter = staticlm::alloc_counter;

constexpr int kSteps = 4;
constexpr size_t kCapacity = 64;

class OpProfileTest : public testing::TestWithParam<const char*> {
 protected:
  // A context of the test's backend, or null with the test skipped when the machine has no
  // such device or the build no such backend.
  ContextPtr Create(bool profile) {
    staticlm_limits limits;
    staticlm_limits_default(&limits);
    limits.max_context = 64;
    limits.threads = 2;
    limits.backend = GetParam();
    limits.profile_ops = profile ? 1 : 0;
    std::string error;
    ContextPtr ctx = staticlm::test::TryCreateContext(STATICLM_DEFAULT_MODEL, limits, &error);
    if (ctx == nullptr && (error.find("no Vulkan") != std::string::npos ||
                           error.find("no CUDA") != std::string::npos ||
                           error.find("built without CUDA") != std::string::npos)) {
      no_device_ = error;
      return nullptr;
    }
    EXPECT_NE(ctx, nullptr) << error;
    return ctx;
  }
  std::string no_device_;
};

// Creates `name` with Create(profile) or returns from the test: skipped without a device.
#define CREATE_OR_RETURN(name, profile)                                   \
  ContextPtr name = Create(profile);                                      \
  if (name == nullptr && !no_device_.empty()) GTEST_SKIP() << no_device_; \
  ASSERT_NE(name, nullptr)

// Prefills a short prompt, then runs kSteps greedy decode steps; returns their wall time and
// the last logits. With `reset_profile`, the profile is emptied before the decode steps.
double PrefillAndDecode(staticlm_context* ctx, bool reset_profile, std::vector<float>* logits) {
  const std::vector<int32_t> prompt = staticlm::test::Tokens(ctx, "The sea is");
  EXPECT_EQ(staticlm_prefill(ctx, prompt.data(), prompt.size()), STATICLM_OK);
  if (reset_profile) staticlm_reset_op_profile(ctx);
  staticlm_sampler greedy;
  staticlm_sampler_default(&greedy);
  greedy.temperature = 0;
  const double start = staticlm::NowSeconds();
  for (int i = 0; i < kSteps; ++i) {
    int32_t token = 0;
    EXPECT_EQ(staticlm_sample(ctx, &greedy, &token), STATICLM_OK);
    EXPECT_EQ(staticlm_decode(ctx, token), STATICLM_OK);
  }
  const double seconds = staticlm::NowSeconds() - start;
  *logits = staticlm::test::Logits(ctx);
  return seconds;
}

const staticlm_op_time* Find(const std::vector<staticlm_op_time>& rows, const char* op,
                             const char* weight) {
  for (const staticlm_op_time& row : rows) {
    if (std::strcmp(row.op, op) == 0 && std::strcmp(row.weight, weight) == 0) return &row;
  }
  return nullptr;
}

TEST_P(OpProfileTest, RowsAccountForEveryOpOfTheDecodeSteps) {
  CREATE_OR_RETURN(ctx, true);
  std::vector<float> logits;
  const double wall = PrefillAndDecode(ctx.get(), true, &logits);

  std::vector<staticlm_op_time> rows(kCapacity);
  size_t n = 0;
  ASSERT_EQ(staticlm_op_profile(ctx.get(), rows.data(), rows.size(), &n), STATICLM_OK);
  ASSERT_GT(n, 3u);
  ASSERT_LE(n, kCapacity);
  rows.resize(n);
  double seconds = 0, matmul_bytes = 0;
  for (const staticlm_op_time& row : rows) {
    SCOPED_TRACE(std::string(row.op) + " " + row.weight);
    EXPECT_EQ(row.calls % kSteps, 0) << row.calls;
    EXPECT_GT(row.calls, 0);
    EXPECT_GE(row.seconds, 0.0);
    seconds += row.seconds;
    if (std::strcmp(row.op, "matmul") == 0) {
      EXPECT_GT(row.weight_bytes, 0.0);
      matmul_bytes += row.weight_bytes;
    } else {
      EXPECT_EQ(row.weight_bytes, 0.0);
    }
    std::printf("%-12s %-6s %4lld calls %8.3f ms %10.0f bytes\n", row.op, row.weight,
                static_cast<long long>(row.calls), row.seconds * 1e3, row.weight_bytes);
  }
  EXPECT_GT(seconds, 0.0);
  EXPECT_LE(seconds, wall);
  // SmolLM2's products: Q4_1 layers; one embedding per step, of the Q8_0 table.
  const staticlm_op_time* q4_1 = Find(rows, "matmul", "Q4_1");
  ASSERT_NE(q4_1, nullptr);
  const staticlm_op_time* embed = Find(rows, "embed", "Q8_0");
  ASSERT_NE(embed, nullptr);
  EXPECT_EQ(embed->calls, kSteps);
  // A step's products read every weight matrix once: the plan's weight bytes of a step, less
  // the norms' vectors and the one embedding row (well under 1 %).
  staticlm_step_cost cost;
  staticlm_step_cost_get(ctx.get(), 1, 0, &cost);
  const double per_step = matmul_bytes / kSteps;
  std::printf("products read %.0f bytes a step; the plan's weight bytes %llu\n", per_step,
              static_cast<unsigned long long>(cost.weight_bytes));
  EXPECT_LE(per_step, static_cast<double>(cost.weight_bytes));
  EXPECT_GE(per_step, 0.99 * static_cast<double>(cost.weight_bytes));

  staticlm_reset_op_profile(ctx.get());
  ASSERT_EQ(staticlm_op_profile(ctx.get(), rows.data(), rows.size(), &n), STATICLM_OK);
  EXPECT_EQ(n, 0u);
}

TEST_P(OpProfileTest, TimingChangesNoLogit) {
  CREATE_OR_RETURN(timed, true);
  CREATE_OR_RETURN(plain, false);
  std::vector<float> a, b;
  PrefillAndDecode(timed.get(), false, &a);
  PrefillAndDecode(plain.get(), false, &b);
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a, b);
}

TEST_P(OpProfileTest, AFewerRowsCapacityCountsAllAndCopiesThatMany) {
  CREATE_OR_RETURN(ctx, true);
  std::vector<float> logits;
  PrefillAndDecode(ctx.get(), false, &logits);
  size_t all = 0;
  ASSERT_EQ(staticlm_op_profile(ctx.get(), nullptr, 0, &all), STATICLM_OK);
  ASSERT_GT(all, 2u);
  staticlm_op_time rows[2];
  rows[1] = {"untouched", "", -1, 0, 0};
  size_t n = 0;
  ASSERT_EQ(staticlm_op_profile(ctx.get(), rows, 1, &n), STATICLM_OK);
  EXPECT_EQ(n, all);
  EXPECT_GT(rows[0].calls, 0);
  EXPECT_STREQ(rows[1].op, "untouched");
}

TEST_P(OpProfileTest, WithoutProfileOpsOrWithBadArgumentsItRefuses) {
  CREATE_OR_RETURN(ctx, false);
  size_t n = 7;
  staticlm_op_time row;
  EXPECT_EQ(staticlm_op_profile(ctx.get(), &row, 1, &n), STATICLM_UNSUPPORTED);
  EXPECT_EQ(n, 0u);
  CREATE_OR_RETURN(timed, true);
  EXPECT_EQ(staticlm_op_profile(timed.get(), nullptr, 1, &n), STATICLM_INVALID_ARGUMENT);
  EXPECT_EQ(staticlm_op_profile(timed.get(), &row, 1, nullptr), STATICLM_INVALID_ARGUMENT);
  EXPECT_EQ(staticlm_op_profile(nullptr, &row, 1, &n), STATICLM_INVALID_ARGUMENT);
}

// The Vulkan driver's own allocations (lavapipe mallocs in vkQueueSubmit) are counted apart
// (counter::DriverEvents) and printed; staticlm's must be none.
TEST_P(OpProfileTest, TimingReadingAndResettingAllocateNothing) {
  if (!counter::Available()) {
    GTEST_SKIP() << "sanitizer build: ASan interposes malloc itself, so counting is disabled";
  }
  CREATE_OR_RETURN(ctx, true);
  int32_t token = 42;
  staticlm_op_time rows[kCapacity];
  size_t n = 0;
  counter::Start();
  staticlm_status prefill = staticlm_prefill(ctx.get(), &token, 1);
  staticlm_status decode = staticlm_decode(ctx.get(), token);
  staticlm_status read = staticlm_op_profile(ctx.get(), rows, kCapacity, &n);
  staticlm_reset_op_profile(ctx.get());
  counter::Stop();
  EXPECT_EQ(prefill, STATICLM_OK);
  EXPECT_EQ(decode, STATICLM_OK);
  EXPECT_EQ(read, STATICLM_OK);
  EXPECT_GT(n, 0u);
  EXPECT_EQ(counter::Events(), 0u);
  std::printf("heap events: staticlm %llu, inside the device driver %llu\n",
              static_cast<unsigned long long>(counter::Events()),
              static_cast<unsigned long long>(counter::DriverEvents()));
}

INSTANTIATE_TEST_SUITE_P(Backends, OpProfileTest, testing::Values("cpu", "vulkan", "cuda"),
                         [](const testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

}  // namespace
