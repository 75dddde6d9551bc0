// Tokenizers read from tokenizer.json against the Hugging Face `tokenizers` package: one
// small trained tokenizer per style (tests/golden/tokenizer_json/NAME/tokenizer.json, made by
// tests/reference/make_tokenizer_json_golden.py) and its ids for a tricky text set
// (NAME.txt). Ids must be equal id for id, and decoding the ids must give the package's
// decode (which keeps special tokens' text and applies the file's Strip decoder).
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "runtime/tokenizer/tokenizer.h"
#include "runtime/tokenizer/tokenizer_json.h"
#include "tests/support/golden_files.h"

namespace staticlm {
namespace {

std::string StyleDir(const std::string& style) {
  return std::string(STATICLM_GOLDEN_DIR) + "/tokenizer_json/" + style;
}

bool Exists(const std::string& path) {
  return std::ifstream(path).good();
}

// What a full decode gives: every token's bytes, less the leading spaces the decoder strips.
std::string Decode(const Tokenizer& tokenizer, const std::vector<int32_t>& ids) {
  std::string text;
  for (int32_t id : ids) text += tokenizer.TokenBytesView(id);
  size_t strip = 0;
  while (strip < static_cast<size_t>(tokenizer.decode_strip_leading()) && strip < text.size() &&
         text[strip] == ' ') {
    ++strip;
  }
  return text.substr(strip);
}

class TokenizerJsonGoldenTest : public testing::TestWithParam<const char*> {};

TEST_P(TokenizerJsonGoldenTest, MatchesTokenizersIdsAndDecoding) {
  const std::string style = GetParam();
  const std::string dir = StyleDir(style);
  std::vector<test::TokenizerCase> cases;
  std::string error;
  ASSERT_TRUE(test::ReadTokenizerGolden(dir + ".txt", &cases, &error)) << error;
  ASSERT_GT(cases.size(), 20u);

  const std::string config = dir + "/tokenizer_config.json";
  Tokenizer tokenizer;
  const Status init = InitTokenizerFromJsonFiles((dir + "/tokenizer.json").c_str(),
                                                 Exists(config) ? config.c_str() : nullptr, 4096,
                                                 &tokenizer, nullptr);
  ASSERT_TRUE(init.ok()) << init.message();

  std::vector<int32_t> ids(8192);
  for (const test::TokenizerCase& c : cases) {
    size_t n = 0;
    const Status s = tokenizer.Encode(c.text, true, ids.data(), ids.size(), &n);
    ASSERT_TRUE(s.ok()) << s.message();
    const std::vector<int32_t> got(ids.begin(), ids.begin() + static_cast<ptrdiff_t>(n));
    EXPECT_EQ(got, c.ids) << style << ", text: '" << c.text << "'";
    ASSERT_TRUE(c.has_decoded);
    EXPECT_EQ(Decode(tokenizer, c.ids), c.decoded) << style << ", text: '" << c.text << "'";
  }
}

INSTANTIATE_TEST_SUITE_P(Styles, TokenizerJsonGoldenTest,
                         testing::Values("gpt2", "smollm", "llama3", "qwen2", "spm", "metaspace",
                                         "metaspace_split", "gemma", "added", "digits", "gpt4o"),
                         [](const testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

}  // namespace
}  // namespace staticlm
