// The short soak CI runs (issue 17 part 4; scripts/soak runs the long one): `staticlm soak`
// generates thousands of tokens through a sliding-window cache much smaller than the run, on
// the CPU with the default model and on Vulkan with a small model, and must end with exit 0:
// resident memory flat within 1 MiB after the first interval and no heap event by staticlm
// (both checked by the command and again here from its JSON). Latency is printed, not
// asserted: timing belongs to benchmarks.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/cli_runner.h"
#include "tests/support/gguf_writer.h"
#include "tests/support/temp_path.h"

namespace staticlm::test {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The number after "key": in `json` (-1 when absent or null).
double NumberAfter(const std::string& json, const std::string& key) {
  size_t at = json.find("\"" + key + "\": ");
  if (at == std::string::npos) return -1;
  return std::atof(json.c_str() + at + key.size() + 4);
}

// Tokens of the CPU run: 2,000 wrap its 64-slot window 31 times, with ten measured intervals.
// The heap count after init is exact whatever the length; resident memory is compared over
// the samples after the first tenth (kCpuTokens / 10 tokens of warm-up: the window's pages
// are touched after 64), so growth of ~700 bytes a token or more exceeds the 1 MiB bound. The
// sanitizer build (there for memory errors; its run is several times slower) runs a quarter:
// 500 tokens still wrap the window seven times. The Vulkan run is 2,000 / kScale tokens
// through a 32-slot window with the command's default warm-up. (5,000 CPU tokens with a
// 1,000-token warm-up took ~80 s of a fresh machine's test command: issue 19.)
#if defined(STATICLM_SANITIZE)
constexpr int kCpuTokens = 500;
constexpr int kScale = 10;
#else
constexpr int kCpuTokens = 2000;
constexpr int kScale = 1;
#endif

void ExpectFlatSoak(const std::string& args, const std::string& json_path) {
  CliResult r = RunCli("soak " + args + " --json " + json_path);
  std::printf("%s", r.output.c_str());
  EXPECT_FALSE(r.signaled);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string json = Slurp(json_path);
  ASSERT_FALSE(json.empty());
  const double spread = NumberAfter(json, "rss_max_after_warmup_bytes") -
                        NumberAfter(json, "rss_min_after_warmup_bytes");
  EXPECT_LE(spread, 1 << 20) << json;
#if !defined(STATICLM_SANITIZE)
  EXPECT_EQ(NumberAfter(json, "heap_allocs_after_init"), 0) << json;
#endif
  std::remove(json_path.c_str());
}

TEST(SoakCliTest, CpuWindowRunStaysFlat) {
  ExpectFlatSoak("--model " STATICLM_DEFAULT_MODEL " --window 64 --tokens " +
                     std::to_string(kCpuTokens) + " --every " + std::to_string(kCpuTokens / 10) +
                     " --warmup " + std::to_string(kCpuTokens / 10),
                 TempPath("soak_cpu.json"));
}

TEST(SoakCliTest, VulkanWindowRunStaysFlat) {
  CliResult devices = RunCli("inspect --devices");
  if (devices.exit_code != 0 || devices.output.find("Vulkan devices (") == std::string::npos) {
    GTEST_SKIP() << "no Vulkan device: " << devices.output;
  }
  const std::string model = TempPath("soak_tiny.gguf");
  ASSERT_TRUE(WriteTinyLlama(model.c_str()).ok());
  ExpectFlatSoak("--backend vulkan --model " + model + " --ctx 64 --window 32 --tokens " +
                     std::to_string(2000 / kScale) + " --every " + std::to_string(200 / kScale),
                 TempPath("soak_vulkan.json"));
  std::remove(model.c_str());
}

TEST(SoakCliTest, RefusesARunThatNeedsAWindow) {
  CliResult r = RunCli("soak --tokens 100000");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("need a sliding window"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace staticlm::test
