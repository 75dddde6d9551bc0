// PageOut (platform/page_out.h): the pages of a file mapping leave the resident set and read
// back the same bytes; anonymous memory keeps its contents; partial pages are left alone.
#include "platform/page_out.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "platform/process_stats.h"
#include "tests/support/disk_file.h"

namespace staticlm {
namespace {

constexpr size_t kMiB = 1024 * 1024;

uint64_t FileRssBytes() {
  return CurrentRssBytes() - NonFileRssBytes();
}

TEST(PageOutTest, FilePagesLeaveTheResidentSetAndReadBackTheSame) {
  const char* skip_reason = "";
  const int fd = test::OpenUnlinkedDiskFile(&skip_reason);
  if (fd < 0) GTEST_SKIP() << skip_reason;
  constexpr size_t kBytes = 32 * kMiB;
  std::vector<uint8_t> pattern(kBytes);
  for (size_t i = 0; i < kBytes; ++i) pattern[i] = static_cast<uint8_t>(i * 131 + i / 4096);
  ASSERT_EQ(write(fd, pattern.data(), kBytes), static_cast<ssize_t>(kBytes));
  const uint8_t* file =
      static_cast<const uint8_t*>(mmap(nullptr, kBytes, PROT_READ, MAP_PRIVATE, fd, 0));
  close(fd);
  ASSERT_NE(file, MAP_FAILED);
  ASSERT_EQ(std::memcmp(file, pattern.data(), kBytes), 0);  // every page resident
  const uint64_t resident = FileRssBytes();
  if (!PageOut(file, kBytes)) {
    munmap(const_cast<uint8_t*>(file), kBytes);
    GTEST_SKIP() << "this kernel does not take MADV_PAGEOUT";
  }
  const uint64_t after = FileRssBytes();
  EXPECT_LE(after + 24 * kMiB, resident) << "file RSS " << resident << " -> " << after;
  EXPECT_EQ(std::memcmp(file, pattern.data(), kBytes), 0);
  munmap(const_cast<uint8_t*>(file), kBytes);
}

TEST(PageOutTest, AnonymousMemoryKeepsItsContents) {
  constexpr size_t kBytes = 8 * kMiB;
  uint8_t* p = static_cast<uint8_t*>(
      mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(p, MAP_FAILED);
  for (size_t i = 0; i < kBytes; ++i) p[i] = static_cast<uint8_t>(i * 7 + 3);
  PageOut(p + 100, kBytes - 200);  // unaligned ends: only the whole pages inside
  for (size_t i = 0; i < kBytes; ++i) {
    ASSERT_EQ(p[i], static_cast<uint8_t>(i * 7 + 3)) << "byte " << i;
  }
  munmap(p, kBytes);
}

TEST(PageOutTest, ARangeWithNoWholePageIsNothingToDo) {
#if !defined(MADV_PAGEOUT)
  GTEST_SKIP() << "built without MADV_PAGEOUT";
#endif
  alignas(4096) static uint8_t page[8192];
  EXPECT_TRUE(PageOut(page + 1, 4000));
  EXPECT_FALSE(PageOut(nullptr, 4096));
}

}  // namespace
}  // namespace staticlm
