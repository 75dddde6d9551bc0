// `staticlm batch`: prompts through fewer slots than prompts (so slots are reused) print, per
// prompt, the text `staticlm run` prints for it alone; no heap after init; bad input fails
// with one line.
#include <string>

#include <gtest/gtest.h>

#include "tests/support/cli_runner.h"

namespace {

using staticlm::test::CliResult;
using staticlm::test::ExpectCleanFailure;
using staticlm::test::RunCli;

const char* const kPrompts[] = {"The capital of France is", "def fibonacci(n):", "Once upon a time",
                                "The theory of special relativity states "};
const std::string kCommon = " --ctx 256 --chunk 16 --temperature 0 --max-tokens 12";

// What `run` streams on stdout for a prompt (the figures line goes to stderr).
std::string RunAlone(const std::string& prompt) {
  std::string command = "(timeout 120 " STATICLM_CLI " run --prompt '";
  command += prompt;
  command += "'";
  command += kCommon;
  command += " 2>/dev/null) </dev/null";
  CliResult r = staticlm::test::RunShell(command);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return r.output;
}

TEST(BatchCliTest, EachPromptGetsTheTextItGetsAlone) {
  std::string args = "batch --batch 3 --threads 2" + kCommon;
  for (const char* p : kPrompts) args += std::string(" --prompt '") + p + "'";
  CliResult r = RunCli(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (int i = 0; i < 4; ++i) {
    // batch prints "[i] text\n"; run prints the text alone.
    std::string expected = "[";
    expected += std::to_string(i);
    expected += "] ";
    expected += RunAlone(kPrompts[i]);
    EXPECT_NE(r.output.find(expected), std::string::npos) << "expected:\n"
                                                          << expected << "\nin:\n"
                                                          << r.output;
  }
  EXPECT_NE(r.output.find("prompts=4 batch=3"), std::string::npos) << r.output;
#ifndef STATICLM_SANITIZE
  EXPECT_NE(r.output.find(" heap_allocs_after_init=0 driver_heap_allocs_after_init=0\n"),
            std::string::npos)
      << r.output;
#endif
}

TEST(BatchCliTest, BadInputFailsWithOneLine) {
  ExpectCleanFailure("batch --batch 2", "--prompt");
  ExpectCleanFailure("batch --batch 65 --prompt x", "batch");
  ExpectCleanFailure("batch --batch 0 --prompt x", "positive");
  ExpectCleanFailure("batch --prompt x --max-tokens 0", "--max-tokens");
}

}  // namespace
