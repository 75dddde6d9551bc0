#include "platform/process_stats.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

#include <gtest/gtest.h>

#include "tests/support/disk_file.h"

namespace staticlm {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;

TEST(ProcessStats, ReportsPlausibleValues) {
  const uint64_t current = CurrentRssBytes();
  const uint64_t peak = PeakRssBytes();
  EXPECT_GT(current, 1 * kMiB);  // a gtest binary with libc and libstdc++ mapped
  EXPECT_LT(current, 64 * 1024 * kMiB);
  EXPECT_GE(peak, current);
  EXPECT_GT(NonFileRssBytes(), 0u);
  EXPECT_LE(NonFileRssBytes(), current + 1 * kMiB);  // a part of VmRSS (read a moment later)
}

// A file's pages, once touched through a mapping, count in VmRSS but not in the non-file part.
TEST(ProcessStats, MappedFilePagesAreNotNonFileMemory) {
  const char* skip_reason = "";
  const int fd = test::OpenUnlinkedDiskFile(&skip_reason);
  if (fd < 0) GTEST_SKIP() << skip_reason;
  constexpr size_t kBytes = 64 * kMiB;
  ASSERT_EQ(ftruncate(fd, kBytes), 0);
  uint8_t* file = static_cast<uint8_t*>(mmap(nullptr, kBytes, PROT_READ, MAP_SHARED, fd, 0));
  close(fd);
  ASSERT_NE(file, MAP_FAILED);
  const uint64_t current_before = CurrentRssBytes();
  const uint64_t non_file_before = NonFileRssBytes();
  uint64_t sum = 0;
  for (size_t b = 0; b < kBytes; b += 4096) sum += file[b];
  asm volatile("" : : "g"(sum) : "memory");
  const uint64_t current_after = CurrentRssBytes();
  const uint64_t non_file_after = NonFileRssBytes();
  munmap(file, kBytes);
  EXPECT_EQ(sum, 0u);
  EXPECT_GE(current_after, current_before + 60 * kMiB);
  EXPECT_LT(non_file_after, non_file_before + 8 * kMiB);
}

// Touching 64 MiB of fresh anonymous memory makes every page resident, so both the current
// and the peak RSS must rise by about that much (60 MiB leaves room for accounting slack).
TEST(ProcessStats, TouchingMemoryRaisesPeakRss) {
  constexpr size_t kBytes = 64 * kMiB;
  const uint64_t current_before = CurrentRssBytes();
  const uint64_t non_file_before = NonFileRssBytes();
  const uint64_t peak_before = PeakRssBytes();
  ASSERT_GT(current_before, 0u);
  ASSERT_GT(non_file_before, 0u);
  ASSERT_GT(peak_before, 0u);

  void* block = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(block, MAP_FAILED);
  std::memset(block, 0x5a, kBytes);
  asm volatile("" : : "g"(block) : "memory");
  const uint64_t current_during = CurrentRssBytes();
  const uint64_t non_file_during = NonFileRssBytes();
  munmap(block, kBytes);
  const uint64_t peak_after = PeakRssBytes();

  EXPECT_GE(current_during, current_before + 60 * kMiB);
  EXPECT_GE(non_file_during, non_file_before + 60 * kMiB);  // anonymous memory: no file backs it
  // The peak before may already exceed the current RSS (memory touched and released earlier),
  // so the new peak is measured from whichever is higher.
  EXPECT_GE(peak_after, current_before + 60 * kMiB);
  EXPECT_GE(peak_after, peak_before);
}

}  // namespace
}  // namespace staticlm
