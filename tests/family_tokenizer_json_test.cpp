// The tokenizer.json of each family's Hugging Face folder (tests/models/families/<family>/hf/,
// made by tests/reference/make_family_models.py) read by staticlm, against transformers'
// tokenizations in tests/golden/families/<family>.txt:
//   tokenize <hex>     a text
//   ids <ids>          add_special_tokens=False (special-token text is parsed)
//   ids_default <ids>  the tokenizer's default (BOS for llama and mistral)
// Families whose folder or golden file is absent are skipped.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/tokenizer/tokenizer.h"
#include "runtime/tokenizer/tokenizer_json.h"

namespace staticlm {
namespace {

struct Case {
  std::string text;
  std::vector<int32_t> ids;
  std::vector<int32_t> ids_default;
};

std::string Unhex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

std::vector<int32_t> Ids(const std::string& rest) {
  std::istringstream in(rest);
  std::vector<int32_t> ids;
  int32_t id = 0;
  while (in >> id) ids.push_back(id);
  return ids;
}

// The tokenize blocks of a family's golden file; other records are skipped.
std::vector<Case> ReadCases(std::ifstream& in) {
  std::vector<Case> cases;
  std::string line;
  int expect = 0;  // 1: ids, 2: ids_default
  while (std::getline(in, line)) {
    const size_t space = line.find(' ');
    const std::string key = line.substr(0, space);
    const std::string rest = space == std::string::npos ? "" : line.substr(space + 1);
    if (key == "tokenize") {
      cases.push_back({Unhex(rest), {}, {}});
      expect = 1;
    } else if (key == "ids" && expect == 1) {
      cases.back().ids = Ids(rest);
      expect = 2;
    } else if (key == "ids_default" && expect == 2) {
      cases.back().ids_default = Ids(rest);
      expect = 0;
    } else {
      expect = 0;
    }
  }
  return cases;
}

class FamilyTokenizerJsonTest : public testing::TestWithParam<const char*> {};

TEST_P(FamilyTokenizerJsonTest, MatchesTransformers) {
  const std::string family = GetParam();
  const std::string hf =
      std::string(STATICLM_GOLDEN_DIR) + "/../models/families/" + family + "/hf/";
  std::ifstream golden(std::string(STATICLM_GOLDEN_DIR) + "/families/" + family + ".txt");
  if (!golden || !std::ifstream(hf + "tokenizer.json")) {
    GTEST_SKIP() << "no " << family << " folder or golden file";
  }
  const std::vector<Case> cases = ReadCases(golden);
  ASSERT_FALSE(cases.empty());
  const std::string config = hf + "tokenizer_config.json";
  Tokenizer tok;
  const Status init = InitTokenizerFromJsonFiles((hf + "tokenizer.json").c_str(),
                                                 std::ifstream(config) ? config.c_str() : nullptr,
                                                 1 << 14, &tok, nullptr);
  ASSERT_TRUE(init.ok()) << init.message();
  std::vector<int32_t> ids(1 << 15);
  for (const Case& c : cases) {
    size_t n = 0;
    ASSERT_TRUE(tok.Encode(c.text, true, ids.data(), ids.size(), &n).ok());
    const std::vector<int32_t> got(ids.begin(), ids.begin() + static_cast<ptrdiff_t>(n));
    EXPECT_EQ(got, c.ids_default) << family << ": '" << c.text << "'";
    const size_t skip = tok.add_bos() && !got.empty() ? 1 : 0;
    EXPECT_EQ(std::vector<int32_t>(got.begin() + static_cast<ptrdiff_t>(skip), got.end()), c.ids)
        << family << ": '" << c.text << "'";
  }
}

INSTANTIATE_TEST_SUITE_P(Families, FamilyTokenizerJsonTest,
                         testing::Values("qwen2", "qwen3", "llama", "phi3", "mistral"),
                         [](const testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

}  // namespace
}  // namespace staticlm
