// The read-bandwidth probe (platform/bandwidth_probe.h): every loop it times must read every word
// of its slice exactly once — a loop that skipped words would report a rate it never read at,
// and the bench's bound with it — and a measurement names the loop that was fastest.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "platform/bandwidth_probe.h"
#include "platform/huge_pages.h"

namespace staticlm {
namespace {

// Lengths that leave the four streams' remainder and a partial 64-byte block at the end.
TEST(BandwidthProbeTest, EveryLoopReadsEveryWordOnce) {
  for (size_t n : {size_t{1}, size_t{31}, size_t{32}, size_t{33}, size_t{1000}, size_t{4099}}) {
    std::vector<uint64_t> words(n);
    uint64_t want = 0;
    for (size_t i = 0; i < n; ++i) {
      words[i] = (i + 1) * 0x9E3779B97F4A7C15ull;
      want += words[i];
    }
    uint64_t sums[kMaxReadLoops];
    const char* names[kMaxReadLoops];
    const int loops = SumWithEveryReadLoop(words.data(), n, sums, names);
    ASSERT_GE(loops, 2);
    for (int l = 0; l < loops; ++l) EXPECT_EQ(sums[l], want) << names[l] << ", n " << n;
  }
}

TEST(BandwidthProbeTest, MeasurementNamesTheFastestLoop) {
  BandwidthProbeOptions options;
  options.buffer_bytes = uint64_t{8} << 20;
  options.threads = 2;
  options.passes = 2;
  BandwidthProbeResult result;
  ASSERT_TRUE(MeasureReadBandwidth(options, &result).ok());
  EXPECT_GT(result.bytes_per_s, 0.0);
  EXPECT_EQ(result.buffer_bytes, options.buffer_bytes);
  std::vector<uint64_t> words(64, 1);
  uint64_t sums[kMaxReadLoops];
  const char* names[kMaxReadLoops];
  const int loops = SumWithEveryReadLoop(words.data(), words.size(), sums, names);
  bool known = false;
  for (int l = 0; l < loops; ++l) known = known || std::strcmp(result.loop, names[l]) == 0;
  EXPECT_TRUE(known) << "loop '" << result.loop << "'";
  // The reported rate is the fastest loop's, and every loop that ran has its own.
  ASSERT_EQ(result.n_loops, loops);
  double fastest = 0;
  for (int l = 0; l < loops; ++l) {
    EXPECT_STREQ(result.loop_names[l], names[l]);
    EXPECT_GT(result.loop_bytes_per_s[l], 0.0) << names[l];
    fastest = result.loop_bytes_per_s[l] > fastest ? result.loop_bytes_per_s[l] : fastest;
  }
  EXPECT_EQ(result.bytes_per_s, fastest);
}

// The buffer is on huge pages where the system has them, as staticlm's own buffers are, unless
// the options say not to.
TEST(BandwidthProbeTest, BufferIsOnHugePagesWhereTheSystemHasThem) {
  for (const bool huge : {true, false}) {
    BandwidthProbeOptions options;
    options.buffer_bytes = uint64_t{8} << 20;
    options.passes = 1;
    options.huge_pages = huge;
    BandwidthProbeResult result;
    ASSERT_TRUE(MeasureReadBandwidth(options, &result).ok());
    EXPECT_EQ(result.huge_pages, huge && QueryHugePages().page_bytes > 0)
        << "mode " << QueryHugePages().mode;
  }
}

TEST(BandwidthProbeTest, BadOptionsAreRefused) {
  BandwidthProbeOptions options;
  options.threads = 0;
  BandwidthProbeResult result;
  EXPECT_FALSE(MeasureReadBandwidth(options, &result).ok());
}

}  // namespace
}  // namespace staticlm
