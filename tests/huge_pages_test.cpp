// Transparent huge pages (platform/huge_pages.h) for the buffers staticlm allocates at init: an
// AlignedBuffer asked for them is aligned and sized to whole huge pages and the kernel backs it
// with them; one too small, or asked for normal pages, is left alone; the CPU backend's packed
// weights get them; and staticlm_limits.huge_pages (default 1) reaches the context's buffers
// through the C API, while 0 keeps normal pages. Every check that needs the kernel to hand out
// huge pages is skipped, saying why, where the system's mode is "never" or unavailable.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/packed_weights.h"
#include "platform/aligned_buffer.h"
#include "platform/huge_pages.h"
#include "staticlm/staticlm.h"
#include "tests/support/context_helpers.h"

namespace staticlm {
namespace {

#define SKIP_WITHOUT_HUGE_PAGES()                                            \
  if (QueryHugePages().page_bytes == 0) {                                    \
    GTEST_SKIP() << "transparent huge pages are \"" << QueryHugePages().mode \
                 << "\" here: buffers keep normal pages";                    \
  }

// In "always" mode the kernel may back any large anonymous region with huge pages, asked or not.
bool OnlyAdvisedRegionsGetHugePages() {
  return std::strcmp(QueryHugePages().mode, "madvise") == 0;
}

TEST(HugePagesTest, SystemModeIsOneOfTheKernelsWords) {
  const HugePageSystem& system = QueryHugePages();
  const std::string mode = system.mode;
  EXPECT_TRUE(mode == "always" || mode == "madvise" || mode == "never" || mode == "unavailable")
      << mode;
  if (mode == "never" || mode == "unavailable") {
    EXPECT_EQ(system.page_bytes, 0u);
  }
  if (system.page_bytes > 0) {
    EXPECT_EQ(system.page_bytes & (system.page_bytes - 1), 0u) << "not a power of two";
  }
}

TEST(HugePagesTest, LargeBufferIsAlignedSizedAndBackedByHugePages) {
  SKIP_WITHOUT_HUGE_PAGES();
  const size_t page = QueryHugePages().page_bytes;
  AlignedBuffer buffer;
  ASSERT_TRUE(buffer.Allocate(3 * page + 1, 64, "test", Pages::kHugeWherePossible).ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.data()) % page, 0u);
  EXPECT_EQ(buffer.size(), 4 * page);
  // Zeroed at init like any AlignedBuffer.
  for (size_t i = 0; i < buffer.size(); i += 4093) ASSERT_EQ(buffer.data()[i], 0) << i;
  // The kernel may fall short of free huge pages under fragmentation, but with 4 asked for
  // and "defrag" compacting advised regions, none at all means the advice was lost.
  EXPECT_GE(ResidentHugePageBytes(buffer.data(), buffer.size()), page);
}

TEST(HugePagesTest, SmallOrNormalBuffersKeepNormalPages) {
  SKIP_WITHOUT_HUGE_PAGES();
  const size_t page = QueryHugePages().page_bytes;
  AlignedBuffer small;
  ASSERT_TRUE(small.Allocate(page / 2, 64, "test", Pages::kHugeWherePossible).ok());
  EXPECT_EQ(small.size(), page / 2) << "rounded up although smaller than one huge page";
  AlignedBuffer normal;
  ASSERT_TRUE(normal.Allocate(4 * page, 64, "test", Pages::kNormal).ok());
  EXPECT_EQ(normal.size(), 4 * page);
  if (OnlyAdvisedRegionsGetHugePages()) {
    EXPECT_EQ(ResidentHugePageBytes(normal.data(), normal.size()), 0u);
  }
}

TEST(HugePagesTest, MappingIsWholeAlignedHugePages) {
  SKIP_WITHOUT_HUGE_PAGES();
  const size_t page = QueryHugePages().page_bytes;
  EXPECT_EQ(MapHugePages(page - 4096), nullptr);
  EXPECT_EQ(MapHugePages(0), nullptr);
  void* data = MapHugePages(2 * page);
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(data) % page, 0u);
  std::memset(data, 1, 2 * page);
  EXPECT_EQ(ResidentHugePageBytes(data, 2 * page), 2 * page);
  UnmapHugePages(data, 2 * page);
}

// Released huge-page buffers leave nothing behind: a normal buffer allocated after them, which
// the heap may place at the same addresses, is not on huge pages.
TEST(HugePagesTest, ReleasedHugeBufferLeavesNoAdviceBehind) {
  SKIP_WITHOUT_HUGE_PAGES();
  if (!OnlyAdvisedRegionsGetHugePages()) GTEST_SKIP() << "mode \"always\": any region may get them";
  const size_t page = QueryHugePages().page_bytes;
  for (int i = 0; i < 3; ++i) {
    AlignedBuffer huge;
    ASSERT_TRUE(huge.Allocate(3 * page, 64, "test", Pages::kHugeWherePossible).ok());
  }
  AlignedBuffer normal;
  ASSERT_TRUE(normal.Allocate(3 * page, 64, "test", Pages::kNormal).ok());
  EXPECT_EQ(ResidentHugePageBytes(normal.data(), normal.size()), 0u);
}

// A Q8_0 matrix whose packed copy spans several huge pages.
TEST(HugePagesTest, PackedWeightsAreOnHugePagesWhenAsked) {
  SKIP_WITHOUT_HUGE_PAGES();
  const size_t page = QueryHugePages().page_bytes;
  const int64_t n_out = 2048, n_in = 2560;  // 5.6 MB of Q8_0
  std::vector<uint8_t> file(static_cast<size_t>(n_out * n_in / 32 * 34), 0);
  for (const Pages pages : {Pages::kHugeWherePossible, Pages::kNormal}) {
    cpu::PackedWeights packed;
    ASSERT_TRUE(packed.Build({{file.data(), DType::kQ8_0, n_out, n_in, false}}, pages).ok());
    ASSERT_GE(packed.bytes(), 2 * page);
    const size_t huge = ResidentHugePageBytes(packed.data(), packed.bytes());
    if (pages == Pages::kHugeWherePossible) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(packed.data()) % page, 0u);
      EXPECT_GE(huge, page);
    } else if (OnlyAdvisedRegionsGetHugePages()) {
      EXPECT_EQ(huge, 0u);
    }
  }
}

// The whole process's huge-page bytes, before and after creating a context of the default
// model with int8 activations (its packed weights, ~92 MiB, are the largest buffer).
size_t HugeBytesAddedByContext(int32_t huge_pages) {
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  EXPECT_EQ(limits.huge_pages, 1) << "not the documented default";
  limits.max_context = 256;
  limits.activation_bits = 8;
  limits.huge_pages = huge_pages;
  const size_t before = ResidentHugePageBytes(nullptr, SIZE_MAX);
  std::string error;
  test::ContextPtr ctx = test::TryCreateContext(STATICLM_DEFAULT_MODEL, limits, &error);
  EXPECT_NE(ctx, nullptr) << error;
  const size_t after = ResidentHugePageBytes(nullptr, SIZE_MAX);
  return after > before ? after - before : 0;
}

TEST(HugePagesTest, ContextBuffersFollowTheLimit) {
  SKIP_WITHOUT_HUGE_PAGES();
  const size_t with = HugeBytesAddedByContext(1);
  EXPECT_GE(with, size_t{64} << 20) << "the packed weights alone are ~92 MiB";
  if (OnlyAdvisedRegionsGetHugePages()) {
    EXPECT_EQ(HugeBytesAddedByContext(0), 0u);
  }
}

}  // namespace
}  // namespace staticlm
