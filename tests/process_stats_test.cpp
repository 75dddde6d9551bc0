#include "platform/process_stats.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstring>

namespace staticlm {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;

TEST(ProcessStats, ReportsPlausibleValues) {
  const uint64_t current = CurrentRssBytes();
  const uint64_t peak = PeakRssBytes();
  EXPECT_GT(current, 1 * kMiB);  // a gtest binary with libc and libstdc++ mapped
  EXPECT_LT(current, 64 * 1024 * kMiB);
  EXPECT_GE(peak, current);
}

// Touching 64 MiB of fresh anonymous memory makes every page resident, so both the current
// and the peak RSS must rise by about that much (60 MiB leaves room for accounting slack).
TEST(ProcessStats, TouchingMemoryRaisesPeakRss) {
  constexpr size_t kBytes = 64 * kMiB;
  const uint64_t current_before = CurrentRssBytes();
  const uint64_t peak_before = PeakRssBytes();
  ASSERT_GT(current_before, 0u);
  ASSERT_GT(peak_before, 0u);

  void* block = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(block, MAP_FAILED);
  std::memset(block, 0x5a, kBytes);
  asm volatile("" : : "g"(block) : "memory");
  const uint64_t current_during = CurrentRssBytes();
  munmap(block, kBytes);
  const uint64_t peak_after = PeakRssBytes();

  EXPECT_GE(current_during, current_before + 60 * kMiB);
  // The peak before may already exceed the current RSS (memory touched and released earlier),
  // so the new peak is measured from whichever is higher.
  EXPECT_GE(peak_after, current_before + 60 * kMiB);
  EXPECT_GE(peak_after, peak_before);
}

}  // namespace
}  // namespace staticlm
