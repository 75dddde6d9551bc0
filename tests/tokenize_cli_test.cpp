// `staticlm tokenize`, `staticlm detokenize`, `run --prompt-ids` and `run --json` on the
// default model: the ids are transformers' (tests/golden/tokenizer.txt), the texts round-trip,
// and bad ids fail in one line.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/cli_runner.h"
#include "tests/support/golden_files.h"

namespace {

using nlohmann::json;
using staticlm::test::CliResult;
using staticlm::test::ExpectCleanFailure;
using staticlm::test::RunCli;

const std::string kModel = "--model " STATICLM_DEFAULT_MODEL;

// Single-quoted for sh.
std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string Join(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) {
    if (!s.empty()) s += ',';
    s += std::to_string(id);
  }
  return s;
}

bool HaveModel() {
  return std::ifstream(STATICLM_DEFAULT_MODEL).good();
}

TEST(TokenizeCliTest, TokenizeGivesReferenceIdsAndDetokenizeRoundTrips) {
  if (!HaveModel()) GTEST_SKIP() << "default model not available";
  std::vector<staticlm::test::TokenizerCase> cases;
  std::string error;
  ASSERT_TRUE(
      staticlm::test::ReadTokenizerGolden(STATICLM_GOLDEN_DIR "/tokenizer.txt", &cases, &error))
      << error;
  int checked = 0;
  for (const auto& c : cases) {
    // Plain printable text only: the shell passes it as one argument.
    if (c.text.empty() || c.text.find('\0') != std::string::npos || c.text[0] == '-') continue;
    if (++checked > 6) break;
    CliResult r = RunCli("tokenize --json " + kModel + " " + Quote(c.text));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const json out = json::parse(r.output, nullptr, false);
    ASSERT_FALSE(out.is_discarded()) << r.output;
    EXPECT_EQ(out["ids"].get<std::vector<int32_t>>(), c.ids) << c.text;
    EXPECT_EQ(out["pieces"].size(), c.ids.size());

    r = RunCli("detokenize --json " + kModel + " " + Join(c.ids));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(json::parse(r.output)["text"].get<std::string>(), c.text);
  }
  EXPECT_GT(checked, 3);
}

TEST(TokenizeCliTest, PlainTokenizePrintsIdAndPiecePerLine) {
  if (!HaveModel()) GTEST_SKIP() << "default model not available";
  CliResult r = RunCli("tokenize " + kModel + " 'Hello world'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "19556\t\"Hello\"\n905\t\"\xC4\xA0world\"\n");
}

TEST(TokenizeCliTest, PromptIdsFeedTheSameTokensAsTheirText) {
  if (!HaveModel()) GTEST_SKIP() << "default model not available";
  const std::string common = " --max-tokens 6 --temperature 0 --json " + kModel;
  CliResult text = RunCli("run --prompt 'The capital of France is'" + common);
  ASSERT_EQ(text.exit_code, 0) << text.output;
  const json a = json::parse(text.output);
  CliResult ids =
      RunCli("run --prompt-ids " + Join(a["prompt_tokens"].get<std::vector<int32_t>>()) + common);
  ASSERT_EQ(ids.exit_code, 0) << ids.output;
  const json b = json::parse(ids.output);
  EXPECT_EQ(b["prompt_tokens"], a["prompt_tokens"]);
  EXPECT_EQ(b["tokens"], a["tokens"]);  // run --json lists the generated ids
  EXPECT_EQ(b["tokens"].size(), 6u);
#if defined(STATICLM_SANITIZE)
  EXPECT_TRUE(b["heap_allocs_after_init"].is_null());  // ASan owns malloc: counting is off
#else
  EXPECT_EQ(b["heap_allocs_after_init"], 0);
#endif
}

TEST(TokenizeCliTest, BadIdsFailInOneLine) {
  if (!HaveModel()) GTEST_SKIP() << "default model not available";
  ExpectCleanFailure("detokenize " + kModel + " 1,x,3", "got 'x'");
  ExpectCleanFailure("detokenize " + kModel + " 1,,3", "comma-separated token ids");
  ExpectCleanFailure("detokenize " + kModel + " 49152", "token id 49152 is out of range");
  ExpectCleanFailure("run " + kModel + " --prompt-ids 5,-1", "got '-1'");
  ExpectCleanFailure("run " + kModel + " --prompt-ids 99999999999", "out of range");
  ExpectCleanFailure("run " + kModel + " --prompt-ids 5 --prompt hi", "--prompt-ids replaces");
  ExpectCleanFailure("tokenize " + kModel + " --json", "needs its input");
}

}  // namespace
