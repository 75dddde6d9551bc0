// The staticlm command on Hugging Face folders: inspect and plan read them (with --quantize),
// run generates from text with the folder's tokenizer.json, fails in one line naming
// tokenizer.json for a folder without one, and --quantize is refused for a GGUF file.
#include <string>

#include <gtest/gtest.h>

#include "tests/support/cli_runner.h"
#include "tests/support/temp_path.h"

namespace {

using staticlm::test::RunCli;

const std::string kDir = STATICLM_HF_MODELS_DIR;

int Lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n' ? 1 : 0;
  return n;
}

TEST(HfFolderCli, InspectReadsAShardedFolder) {
  auto r = RunCli("inspect --model " + kDir + "/llama_sharded --ctx 128");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Hugging Face folder, 2 safetensors files"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("architecture: llama, 2 layers, width 64"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("mapped from the file"), std::string::npos) << r.output;
}

TEST(HfFolderCli, InspectAndPlanWithQuantize) {
  auto r = RunCli("inspect --model " + kDir + "/llama_f32 --ctx 64 --quantize q8_0");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("quantized at init"), std::string::npos) << r.output;
  r = RunCli("plan --model " + kDir + "/gemma3_bf16 --ctx 64 --quantize q4_0 --json");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\"decode\""), std::string::npos) << r.output;
}

TEST(HfFolderCli, RunReadsTheFoldersTokenizer) {
  auto r = RunCli("run --model " + kDir + "/llama_f32 --ctx 64 -p hello --max-tokens 4");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("prompt_tokens="), std::string::npos) << r.output;
}

TEST(HfFolderCli, RunWithoutATokenizerFailsInOneLine) {
  // The same weights and config, no tokenizer.json: run prints text, so it cannot start (the C
  // API still runs ids: hf_folder_model_test).
  const std::string dir = staticlm::test::TempPath("hf_no_tokenizer");
  auto made = staticlm::test::RunShell("mkdir -p " + dir + " && ln -sf " + kDir +
                                       "/llama_f32/config.json " + kDir +
                                       "/llama_f32/model.safetensors " + dir + "/");
  ASSERT_EQ(made.exit_code, 0) << made.output;
  auto r = RunCli("run --model " + dir + " --ctx 64 -p hello");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("tokenizer.json"), std::string::npos) << r.output;
  EXPECT_EQ(Lines(r.output), 1) << r.output;
  staticlm::test::RunShell("rm -rf " + dir);
}

TEST(HfFolderCli, QuantizeIsRefusedForAFileAndUnknownTypes) {
  auto r = RunCli("plan --model " + kDir + "/llama_f16.gguf --ctx 64 --quantize q8_0 --json");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--quantize applies to Hugging Face folders"), std::string::npos)
      << r.output;
  r = RunCli("plan --model " + kDir + "/llama_f32 --ctx 64 --quantize q2_k --json");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--quantize expects q8_0, q4_0 or q4_k, got 'q2_k'"), std::string::npos)
      << r.output;
}

}  // namespace
