// `staticlm bench` end to end on the real model with tiny settings: the JSON report has every
// documented key with sane values, no heap use after init, the SVG has a line per depth, and
// bad input fails with one clean line.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/cli_runner.h"
#include "tests/support/temp_path.h"

namespace {

using Result = staticlm::test::CliResult;
using staticlm::test::ExpectCleanFailure;
using staticlm::test::RunCli;

std::string TempPath(const std::string& name) {
  return staticlm::test::TempPath("bench_" + name);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The text right after `"key": ` (the first occurrence), or "" if the key is absent.
std::string ValueOf(const std::string& json, const std::string& key) {
  size_t at = json.find("\"" + key + "\": ");
  if (at == std::string::npos) return "";
  return json.substr(at + key.size() + 4, 40);
}

double NumberOf(const std::string& json, const std::string& key) {
  std::string v = ValueOf(json, key);
  if (v.empty() || !(v[0] == '-' || (v[0] >= '0' && v[0] <= '9'))) return -1.0;
  return std::strtod(v.c_str(), nullptr);
}

// Braces and brackets outside strings balance and never go negative: a rough validity check.
bool Balanced(const std::string& json) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    char c = json[i];
    if (in_string) {
      if (c == '\\') ++i;
      if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') --depth;
    if (depth < 0) return false;
  }
  return depth == 0 && !in_string;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

const std::string kModel = std::string("--model ") + STATICLM_DEFAULT_MODEL;
const std::string kTiny =
    kModel + " --prompt-tokens 8 --gen-tokens 4 --depths 0,16 --reps 1 --ctx 64 --probe-mib 16";

TEST(BenchCliTest, ReportsEveryKey) {
  std::string json_path = TempPath("report.json");
  std::string svg_path = TempPath("plot.svg");
  std::remove(json_path.c_str());
  std::remove(svg_path.c_str());
  Result r = RunCli("bench " + kTiny + " --json " + json_path + " --plot " + svg_path);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("time to first token"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("decode latency"), std::string::npos) << r.output;

  std::string json = ReadFile(json_path);
  ASSERT_FALSE(json.empty());
  EXPECT_EQ(json.front(), '{');
  EXPECT_TRUE(Balanced(json)) << json;
  for (const char* key : {"init_ms",
                          "ttft_ms",
                          "prefill_tokens_per_s",
                          "decode_tokens_per_s_by_depth",
                          "decode_latency_ms",
                          "peak_rss_bytes",
                          "planned_bytes",
                          "heap_allocs_after_init",
                          "driver_heap_allocs_after_init",
                          "bytes_read_per_decode_step",
                          "read_bandwidth_bytes_per_s",
                          "read_bandwidth_probe_loop",
                          "read_bandwidth_probe_huge_pages",
                          "transparent_huge_pages",
                          "huge_page_bytes",
                          "resident_huge_page_bytes",
                          "huge_pages",
                          "bandwidth_bound_tokens_per_s",
                          "slow_steps_by_depth",
                          "slow_steps_ms_above_p50_by_depth",
                          "decode_host_steal_ms_by_depth",
                          "decode_cpu_wait_ms_by_depth",
                          "decode_involuntary_switches_by_depth",
                          "machine",
                          "backend",
                          "threads",
                          "sync_ms_per_token",
                          "noise",
                          "config",
                          "cpu",
                          "cores",
                          "min",
                          "p50",
                          "p90",
                          "p99",
                          "max",
                          "stdev"}) {
    EXPECT_NE(json.find(std::string("\"") + key + "\": "), std::string::npos) << key;
  }
  for (const char* key :
       {"init_ms", "ttft_ms", "prefill_tokens_per_s", "peak_rss_bytes", "planned_bytes",
        "read_bandwidth_bytes_per_s", "bandwidth_bound_tokens_per_s", "threads", "cores"}) {
    EXPECT_GT(NumberOf(json, key), 0.0) << key << ": " << ValueOf(json, key);
  }
  EXPECT_GE(NumberOf(json, "sync_ms_per_token"), 0.0);
  // Each depth appears as a key of the per-depth objects, with a positive speed.
  size_t object = json.find("\"decode_tokens_per_s_by_depth\": ");
  std::string speeds = json.substr(object, json.find('}', object) - object);
  EXPECT_GT(NumberOf(speeds, "0"), 0.0) << speeds;
  EXPECT_GT(NumberOf(speeds, "16"), 0.0) << speeds;
  size_t bytes_object = json.find("\"bytes_read_per_decode_step\": ");
  std::string bytes = json.substr(bytes_object, json.find('}', bytes_object) - bytes_object);
  // A decode step reads every weight: tens of MiB for SmolLM2-135M, more at depth 16.
  EXPECT_GT(NumberOf(bytes, "0"), 10e6) << bytes;
  EXPECT_GT(NumberOf(bytes, "16"), NumberOf(bytes, "0")) << bytes;
  // What took the CPUs away during the decode steps: read from procfs on Linux, so known
  // (never NaN) and never negative; the slow steps are at most the steps timed.
  for (const char* key :
       {"slow_steps_by_depth", "slow_steps_ms_above_p50_by_depth", "decode_host_steal_ms_by_depth",
        "decode_cpu_wait_ms_by_depth", "decode_involuntary_switches_by_depth"}) {
    const size_t at = json.find(std::string("\"") + key + "\": ");
    const std::string per_depth = json.substr(at, json.find('}', at) - at);
    EXPECT_GE(NumberOf(per_depth, "0"), 0.0) << per_depth;
    EXPECT_GE(NumberOf(per_depth, "16"), 0.0) << per_depth;
  }
  const size_t slow_at = json.find("\"slow_steps_by_depth\": ");
  const std::string slow = json.substr(slow_at, json.find('}', slow_at) - slow_at);
  EXPECT_LE(NumberOf(slow, "0"), 4.0) << slow;  // --gen-tokens 4 --reps 1
  EXPECT_NE(r.output.find("slow steps  (> 1.10 x p50)"), std::string::npos) << r.output;
  EXPECT_GE(NumberOf(json, "peak_rss_bytes"), NumberOf(json, "planned_bytes") * 0.5);
#ifdef STATICLM_SANITIZE
  EXPECT_EQ(ValueOf(json, "heap_allocs_after_init").rfind("null", 0), 0u) << json;
#else
  EXPECT_EQ(ValueOf(json, "heap_allocs_after_init").rfind("0,", 0), 0u) << json;
  EXPECT_EQ(ValueOf(json, "driver_heap_allocs_after_init").rfind("0,", 0), 0u) << json;  // CPU
#endif

  std::string svg = ReadFile(svg_path);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u) << svg.substr(0, 80);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_EQ(Count(svg, "<polyline data-depth=\"0\""), 1u);
  EXPECT_EQ(Count(svg, "<polyline data-depth=\"16\""), 1u);
}

TEST(BenchCliTest, PlotHasALinePerDepthAndRep) {
  std::string svg_path = TempPath("reps.svg");
  std::remove(svg_path.c_str());
  Result r = RunCli("bench " + kModel +
                    " --prompt-tokens 4 --gen-tokens 3 --depths 0,5,9 --reps 2 --warmup 0 "
                    "--ctx 32 --probe-mib 0 --plot " +
                    svg_path);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::string svg = ReadFile(svg_path);
  EXPECT_EQ(Count(svg, "<polyline "), 6u);
  EXPECT_EQ(Count(svg, "data-depth=\"9\" data-rep=\"1\""), 1u);
  EXPECT_NE(r.output.find("not measured"), std::string::npos) << r.output;
}

// --op-profile: a table per depth of where a decode token's time goes and one of where a
// prompt token's goes in prefill, the same rows in the JSON report; on the CPU and, where the
// machine has a Vulkan device, on Vulkan (device timestamps).
TEST(BenchCliTest, OpProfilePrintsWhereTheTimeGoes) {
  std::string json_path = TempPath("ops.json");
  std::remove(json_path.c_str());
  Result r = RunCli("bench " + kTiny + " --op-profile --json " + json_path);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("decode ops at depth 0 "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("decode ops at depth 16 "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("  matmul       Q4_1 "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("  attention "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("prefill ops (per prompt token, "), std::string::npos) << r.output;
  std::string json = ReadFile(json_path);
  EXPECT_TRUE(Balanced(json));
  EXPECT_NE(json.find("\"decode_op_profile_by_depth\": {"), std::string::npos) << json;
  EXPECT_NE(json.find("\"prefill_op_profile\": ["), std::string::npos) << json;
  EXPECT_GT(NumberOf(json, "ms_per_token"), 0.0) << json;
  EXPECT_GT(NumberOf(json, "calls_per_token"), 0.0) << json;
  // One row per depth and one for the prefill.
  EXPECT_EQ(Count(json, "\"op\": \"embed\""), 3u) << json;

  Result devices = RunCli("inspect --devices");
  if (devices.output.find("Vulkan devices (") == std::string::npos) return;
  Result vulkan = RunCli("bench " + kTiny + " --backend vulkan --op-profile --gen-tokens 2");
  EXPECT_EQ(vulkan.exit_code, 0) << vulkan.output;
  EXPECT_NE(vulkan.output.find("decode ops at depth 0 "), std::string::npos) << vulkan.output;
  EXPECT_NE(vulkan.output.find("  matmul       Q4_1 "), std::string::npos) << vulkan.output;
  EXPECT_NE(vulkan.output.find("prefill ops (per prompt token, "), std::string::npos)
      << vulkan.output;
}

TEST(BenchCliTest, BadInputFailsCleanly) {
  ExpectCleanFailure("bench " + kTiny + " --reps 0", "--reps");
  ExpectCleanFailure("bench " + kTiny + " --gen-tokens 0", "--gen-tokens");
  ExpectCleanFailure("bench " + kTiny + " --frobnicate 3", "unknown");
  ExpectCleanFailure("bench " + kTiny + " --pin --ctx", "needs a value");
  ExpectCleanFailure("bench " + kTiny + " --depths 0,,16", "--depths");
  ExpectCleanFailure("bench " + kTiny + " --depths 4,4", "twice");
  ExpectCleanFailure("bench " + kTiny + " --depths -1", "--depths");
  ExpectCleanFailure("bench " + kTiny + " --kv f8", "--kv");
  ExpectCleanFailure("bench " + kTiny + " --depths 0,61", "more than --ctx 64");
  ExpectCleanFailure("bench " + kTiny + " --prompt-tokens 65", "more than --ctx 64");
  ExpectCleanFailure("bench " + kModel + " --depths 1000000", "model's context");
  ExpectCleanFailure("bench " + kTiny + " --json /nonexistent-dir/out.json", "cannot write");
  ExpectCleanFailure("bench " + kTiny + " --plot /nonexistent-dir/out.svg", "cannot write");
  ExpectCleanFailure("bench --model /nonexistent/model.gguf", "cannot open");
}

}  // namespace
