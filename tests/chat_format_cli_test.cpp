// The staticlm command's chat formats: --chat-template forces one; a model without a template
// (Gemma 3 270M base) or with an unknown one loads and runs plain prompts, while --chat and
// chat fail in one line naming the flag (and, for Gemma, the "gemma" format).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/cli_runner.h"
#include "tests/support/gguf_writer.h"
#include "tests/support/temp_path.h"

namespace {

using staticlm::test::CliResult;
using staticlm::test::ExpectCleanFailure;
using staticlm::test::RunCli;

bool HaveGemma() {
  std::FILE* f = std::fopen(STATICLM_GEMMA_MODEL, "rb");
  if (f != nullptr) std::fclose(f);
  return f != nullptr;
}

const std::string kGemma = std::string("--model ") + STATICLM_GEMMA_MODEL;
constexpr const char* kNoTemplate =
    "the model has no chat template (tokenizer.chat_template); its family (gemma3) uses "
    "\"gemma\": choose it with --chat-template gemma";

TEST(ChatFormatCliTest, GemmaBaseModelWithoutTemplate) {
  if (!HaveGemma()) GTEST_SKIP() << "Gemma 3 270M not available";
  ExpectCleanFailure("run " + kGemma + " --ctx 128 --chat --prompt Hi", kNoTemplate);
  ExpectCleanFailure("chat " + kGemma + " --ctx 128", kNoTemplate);
  ExpectCleanFailure("run " + kGemma + " --ctx 128 --chat-template bogus --prompt Hi",
                     "unknown chat format 'bogus': expected chatml, gemma, llama3, phi3, mistral, "
                     "mistral-nemo");
  // Plain prompts still run.
  CliResult r = RunCli("run " + kGemma + " --ctx 128 -n 2 --temperature 0 --prompt Hi");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// The ids of "prompt_tokens": [...] in run --json's output.
std::vector<int> PromptTokens(const std::string& out) {
  std::vector<int> ids;
  size_t at = out.find("\"prompt_tokens\": [");
  if (at == std::string::npos) return ids;
  const char* p = out.c_str() + at + 18;
  while (*p != ']' && *p != '\0') {
    char* end = nullptr;
    ids.push_back(static_cast<int>(std::strtol(p, &end, 10)));
    p = end;
    while (*p == ',' || *p == ' ') ++p;
  }
  return ids;
}

TEST(ChatFormatCliTest, GemmaForcedFormatRuns) {
  if (!HaveGemma()) GTEST_SKIP() << "Gemma 3 270M not available";
  CliResult r = RunCli("run " + kGemma +
                       " --ctx 256 --chat --chat-template gemma --system 'Be brief.' --prompt "
                       "'What is the capital of France?' -n 4 --temperature 0 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::vector<int> ids = PromptTokens(r.output);
  // <bos> <start_of_turn> user \n Be brief. \n\n What is … <end_of_turn> \n <start_of_turn> model
  // \n: one BOS (the tokenizer's), none from the template's {{ bos_token }}.
  ASSERT_GE(ids.size(), 10u) << r.output;
  EXPECT_EQ(ids[0], 2) << r.output;
  EXPECT_EQ(ids[1], 105) << r.output;
  for (size_t i = 1; i < ids.size(); ++i) EXPECT_NE(ids[i], 2) << r.output;
  EXPECT_EQ(ids[ids.size() - 3], 105) << r.output;
  EXPECT_EQ(ids[ids.size() - 5], 106) << r.output;  // <end_of_turn>
#ifndef STATICLM_SANITIZE
  EXPECT_NE(r.output.find("\"heap_allocs_after_init\": 0, \"driver_heap_allocs_after_init\": 0}"),
            std::string::npos)
      << r.output;
#endif
}

// The figure after `key` in the turn line of `turn` ("turn 2: prefilled 18 tokens, … position
// 39"), or -1.
int TurnFigure(const std::string& out, int turn, const std::string& key) {
  const size_t line = out.find("turn " + std::to_string(turn) + ": ");
  if (line == std::string::npos) return -1;
  const size_t at = out.find(key, line);
  return at == std::string::npos ? -1 : std::atoi(out.c_str() + at + key.size());
}

// `chat` with Gemma's format: the system text joins the conversation's first turn (no
// snapshot), and the second turn continues from the cache, prefilling only its own tokens.
TEST(ChatFormatCliTest, GemmaChatKeepsTheCacheBetweenTurns) {
  if (!HaveGemma()) GTEST_SKIP() << "Gemma 3 270M not available";
  const std::string chat = "chat " + kGemma +
                           " --chat-template gemma --max-tokens 4 "
                           "--temperature 0 --ctx 256";
  CliResult with =
      staticlm::test::RunShell("printf 'Hello!\\nWhat is 2+2?\\n' | timeout 300 " STATICLM_CLI " " +
                               chat + " --system 'Be brief.'");
  CliResult without =
      staticlm::test::RunShell("printf 'Hello!\\n' | timeout 300 " STATICLM_CLI " " + chat);
  ASSERT_EQ(with.exit_code, 0) << with.output;
  ASSERT_EQ(without.exit_code, 0) << without.output;
  EXPECT_EQ(with.output.find("snapshotted"), std::string::npos) << with.output;
  // "Be brief.\n\n" opens the first user turn.
  EXPECT_GT(TurnFigure(with.output, 1, "prefilled "), TurnFigure(without.output, 1, "prefilled "))
      << with.output << without.output;
  const int position1 = TurnFigure(with.output, 1, "position ");
  const int prefilled2 = TurnFigure(with.output, 2, "prefilled ");
  ASSERT_GT(position1, 0) << with.output;
  EXPECT_GE(TurnFigure(with.output, 2, "position "), position1 + prefilled2) << with.output;
  // <end_of_turn> \n <start_of_turn> user \n … <end_of_turn> \n <start_of_turn> model \n
  EXPECT_LT(prefilled2, 25) << with.output;
}

TEST(ChatFormatCliTest, UnknownTemplateFailsOnlyAtChatTime) {
  const std::string path = staticlm::test::TempPath("chat_format_cli_unknown.gguf");
  staticlm::test::TinyLlamaOptions options;
  options.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}";
  ASSERT_TRUE(staticlm::test::WriteTinyLlama(path.c_str(), options).ok());
  const std::string model = "--model " + path + " --ctx 64";
  ExpectCleanFailure("run " + model + " --chat --prompt Hi",
                     "the model's chat template (tokenizer.chat_template) is not one staticlm "
                     "recognises (chatml, gemma, llama3, phi3, mistral, mistral-nemo): choose a "
                     "format with --chat-template NAME");
  CliResult plain = RunCli("run " + model + " -n 2 --prompt Hi");
  EXPECT_EQ(plain.exit_code, 0) << plain.output;
  CliResult forced = RunCli("run " + model + " -n 2 --chat-template chatml --prompt Hi");
  EXPECT_EQ(forced.exit_code, 0) << forced.output;
  std::remove(path.c_str());
}

}  // namespace
