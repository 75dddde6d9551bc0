// The staticlm command on bad input: every case exits non-zero with one clear line on stderr,
// never a crash, hang or abort. And on good input, `run --json` reports no heap use after init.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/cli_runner.h"
#include "tests/support/gguf_writer.h"
#include "tests/support/temp_path.h"

namespace {

using Result = staticlm::test::CliResult;
using staticlm::test::ExpectCleanFailure;
using staticlm::test::RunCli;

std::string TempPath(const std::string& name) {
  return staticlm::test::TempPath("cli_" + name);
}

void WriteFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

std::vector<uint8_t> TinyModelBytes() {
  staticlm::test::GgufWriter writer;
  EXPECT_TRUE(staticlm::test::BuildTinyLlama({}, &writer).ok());
  return writer.Serialize();
}

TEST(CliTest, MissingModel) {
  ExpectCleanFailure("run --model /nonexistent/model.gguf", "cannot open");
}

TEST(CliTest, EmptyFile) {
  std::string path = TempPath("empty.gguf");
  WriteFile(path, {});
  ExpectCleanFailure("run --model " + path, "staticlm:");
}

TEST(CliTest, WrongMagic) {
  auto bytes = TinyModelBytes();
  bytes[0] = 'X';
  std::string path = TempPath("magic.gguf");
  WriteFile(path, bytes);
  ExpectCleanFailure("inspect --model " + path, "magic");
}

TEST(CliTest, WrongVersion) {
  auto bytes = TinyModelBytes();
  bytes[4] = 99;  // u32 version after the magic
  std::string path = TempPath("version.gguf");
  WriteFile(path, bytes);
  ExpectCleanFailure("run --model " + path, "version");
}

TEST(CliTest, TruncatedFile) {
  auto bytes = TinyModelBytes();
  for (size_t keep : {size_t(10), bytes.size() / 3, bytes.size() - 1}) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + long(keep));
    std::string path = TempPath("truncated.gguf");
    WriteFile(path, cut);
    ExpectCleanFailure("run --model " + path, "staticlm:");
  }
}

TEST(CliTest, TruncatedRealModel) {
  std::ifstream in(STATICLM_DEFAULT_MODEL, std::ios::binary);
  ASSERT_TRUE(in) << "run scripts/fetch-model first";
  std::vector<uint8_t> head(4 << 20);
  in.read(reinterpret_cast<char*>(head.data()), std::streamsize(head.size()));
  std::string path = TempPath("real_truncated.gguf");
  WriteFile(path, head);
  ExpectCleanFailure("run --model " + path, "staticlm:");
}

TEST(CliTest, UnsupportedArchitecture) {
  auto bytes = TinyModelBytes();
  std::string s(bytes.begin(), bytes.end());
  size_t key = s.find("general.architecture");
  ASSERT_NE(key, std::string::npos);
  size_t value = s.find("llama", key + 20);
  ASSERT_NE(value, std::string::npos);
  std::copy_n("mamba", 5, bytes.begin() + long(value));
  std::string path = TempPath("arch.gguf");
  WriteFile(path, bytes);
  ExpectCleanFailure("run --model " + path, "general.architecture = 'mamba'");
}

TEST(CliTest, UnsupportedTensorType) {
  staticlm::test::GgufWriter writer;
  writer.AddString("general.architecture", "llama");
  // Q2_K (ggml id 10, 84 bytes per 256 values): a real ggml type staticlm does not decode.
  writer.AddTensor("blk.0.attn_q.weight", {256, 2}, uint32_t(10), std::vector<uint8_t>(168, 0));
  std::string path = TempPath("type.gguf");
  ASSERT_TRUE(writer.WriteFile(path.c_str()).ok());
  Result r = RunCli("run --model " + path);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("blk.0.attn_q.weight"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Q2_K"), std::string::npos) << r.output;
}

TEST(CliTest, TensorDataOutOfBounds) {
  staticlm::test::GgufWriter writer;
  ASSERT_TRUE(staticlm::test::BuildTinyLlama({}, &writer).ok());
  writer.OverrideTensorOffset(3, uint64_t(1) << 40);
  std::string path = TempPath("bounds.gguf");
  ASSERT_TRUE(writer.WriteFile(path.c_str()).ok());
  ExpectCleanFailure("run --model " + path, "staticlm:");
}

TEST(CliTest, PromptLongerThanContext) {
  std::string path = TempPath("tiny.gguf");
  ASSERT_TRUE(staticlm::test::WriteTinyLlama(path.c_str()).ok());
  ExpectCleanFailure("run --model " + path + " --ctx 16 --chunk 8 --prompt '" +
                         std::string(200, 'a') + " b c d e f g h i j k l m n o p q r s t'",
                     "longer than the context");
}

TEST(CliTest, InvalidUtf8Prompt) {
  std::string path = TempPath("tiny.gguf");
  ASSERT_TRUE(staticlm::test::WriteTinyLlama(path.c_str()).ok());
  ExpectCleanFailure("run --model " + path + " --ctx 128 --prompt \"$(printf 'abc\\377\\376')\"",
                     "UTF-8");
}

TEST(CliTest, BadLimitsAndFlags) {
  std::string path = TempPath("tiny.gguf");
  ASSERT_TRUE(staticlm::test::WriteTinyLlama(path.c_str()).ok());
  ExpectCleanFailure("run --model " + path + " --ctx 0", "positive");
  ExpectCleanFailure("run --model " + path + " --ctx -5", "positive");
  ExpectCleanFailure("run --model " + path + " --chunk 0", "positive");
  ExpectCleanFailure("run --model " + path + " --threads 0", "positive");
  ExpectCleanFailure("run --model " + path + " --max-prompt-bytes -1", "positive");
  ExpectCleanFailure("run --model " + path + " --ctx 100000", "exceeds the model's context");
  ExpectCleanFailure("run --model " + path + " --ctx abc", "expects an integer");
  ExpectCleanFailure("run --model " + path + " --ctx 128 --temperature -1", "temperature");
  ExpectCleanFailure("run --model " + path + " --kv q3", "--kv");
  ExpectCleanFailure("run --model " + path + " --bogus 1", "unknown option");
  ExpectCleanFailure("frobnicate", "unknown command");
}

TEST(CliTest, RunJsonReportsNoHeapAfterInit) {
  Result r = RunCli("run --json --max-tokens 8 --temperature 0 --ctx 256");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* key :
       {"\"prompt_tokens\": [", "\"tokens\": [", "\"text\": \"", "\"prefill_tokens_per_s\": ",
        "\"decode_tokens_per_s\": ", "\"peak_rss_bytes\": ", "\"planned_bytes\": "}) {
    EXPECT_NE(r.output.find(key), std::string::npos) << key << " missing in " << r.output;
  }
#ifdef STATICLM_SANITIZE
  EXPECT_NE(r.output.find("\"heap_allocs_after_init\": null"), std::string::npos) << r.output;
#else
  EXPECT_NE(r.output.find("\"heap_allocs_after_init\": 0, \"driver_heap_allocs_after_init\": 0}"),
            std::string::npos)
      << r.output;
#endif
}

TEST(CliTest, InspectPrintsMemoryBeforeAllocating) {
  Result r = RunCli("inspect --ctx 2048");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* word : {"llama", "Q4_1", "weights", "kv_cache", "arena", "total"}) {
    EXPECT_NE(r.output.find(word), std::string::npos) << word << " missing in " << r.output;
  }
  // 30 layers × K and V × 3 KV heads × 2048 positions × 64 dims × 2 bytes (f16).
  EXPECT_NE(r.output.find("47185920 bytes"), std::string::npos) << r.output;
}

}  // namespace

namespace {

// `chat` keeps the cache between turns: the second turn prefills only its own tokens.
TEST(CliTest, ChatKeepsTheCacheBetweenTurns) {
  staticlm::test::CliResult r = staticlm::test::RunShell(
      "printf 'Hello!\\nWhat is 2+2?\\n/reset\\nHi again\\n' | timeout 300 " STATICLM_CLI
      " chat --max-tokens 8 --temperature 0 --ctx 512");
  const std::string& out = r.output;
  ASSERT_EQ(r.exit_code, 0) << out;
  int prefilled[3] = {0, 0, 0}, position[3] = {0, 0, 0};
  for (int turn = 1; turn <= 3; ++turn) {
    std::string key = "turn " + std::to_string(turn) + ": prefilled ";
    size_t at = out.find(key);
    ASSERT_NE(at, std::string::npos) << out;
    prefilled[turn - 1] = std::atoi(out.c_str() + at + key.size());
    size_t pos = out.find("position ", at);
    ASSERT_NE(pos, std::string::npos) << out;
    position[turn - 1] = std::atoi(out.c_str() + pos + 9);
  }
  // Turn 1 includes the template's default system message; turn 2 only closes the previous
  // reply and adds its user message; after /reset, turn 3 starts over with the system message.
  EXPECT_LT(prefilled[1], prefilled[0]) << out;
  EXPECT_GT(position[1], position[0] + prefilled[1] - 1) << out;
  EXPECT_NE(out.find("conversation reset"), std::string::npos) << out;
  EXPECT_LE(position[2], prefilled[2] + 8) << out;
#ifndef STATICLM_SANITIZE
  EXPECT_NE(out.find(" heap_allocs_after_init=0 "), std::string::npos) << out;
#endif
}

}  // namespace
