// Compares Tokenizer::Encode with golden token ids from an independent reference (Hugging
// Face transformers / llama.cpp), read from tests/golden/tokenizer.txt:
//   # comment
//   text <hex of the UTF-8 bytes>
//   ids <space-separated ids>
// Text is encoded with parse_special (the references always recognise special tokens) and
// the file's add_bos flag (false for SmolLM2).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/gguf/gguf_file.h"
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/tokenizer/tokenizer_from_gguf.h"

namespace staticlm {
namespace {

struct GoldenCase {
  int line = 0;
  std::string text;
  std::vector<int32_t> ids;
};

bool DecodeHex(const std::string& hex, std::string* out) {
  if (hex.size() % 2 != 0) return false;
  out->clear();
  for (size_t i = 0; i < hex.size(); i += 2) {
    int byte = 0;
    for (size_t k = i; k < i + 2; ++k) {
      const char c = hex[k];
      int v = -1;
      if (c >= '0' && c <= '9') v = c - '0';
      if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
      if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
      if (v < 0) return false;
      byte = byte * 16 + v;
    }
    out->push_back(static_cast<char>(byte));
  }
  return true;
}

// Parses the golden file; a malformed line fails the test with its number.
std::vector<GoldenCase> ReadGolden(std::ifstream& in) {
  std::vector<GoldenCase> cases;
  std::string line;
  int number = 0;
  bool want_ids = false;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    if (line.rfind("text", 0) == 0 && !want_ids) {
      GoldenCase c;
      c.line = number;
      const size_t space = line.find(' ');
      const std::string hex = space == std::string::npos ? "" : line.substr(space + 1);
      EXPECT_TRUE(DecodeHex(hex, &c.text)) << "bad hex on line " << number;
      cases.push_back(c);
      want_ids = true;
    } else if (line.rfind("ids", 0) == 0 && want_ids) {
      std::istringstream ids(line.substr(3));
      int32_t id = 0;
      while (ids >> id) cases.back().ids.push_back(id);
      EXPECT_TRUE(ids.eof()) << "bad id on line " << number;
      want_ids = false;
    } else {
      ADD_FAILURE() << "unexpected line " << number << ": " << line.substr(0, 40);
    }
  }
  EXPECT_FALSE(want_ids) << "the last text has no ids";
  return cases;
}

TEST(TokenizerGoldenTest, MatchesReferenceIdsExactly) {
  const std::string path = std::string(STATICLM_GOLDEN_DIR) + "/tokenizer.txt";
  std::ifstream in(path);
  if (!in) GTEST_SKIP() << path << " does not exist yet (made by tests/reference scripts)";
  const std::vector<GoldenCase> cases = ReadGolden(in);
  ASSERT_FALSE(cases.empty()) << path << " holds no cases";

  gguf::GgufFile file;
  const Status open = file.Open(STATICLM_DEFAULT_MODEL);
  if (!open.ok()) GTEST_SKIP() << "model not available: " << open.message();
  size_t longest = 1;
  for (const GoldenCase& c : cases) longest = std::max(longest, c.text.size());
  Tokenizer tokenizer;
  const Status init = InitTokenizerFromGguf(file, longest, &tokenizer);
  ASSERT_TRUE(init.ok()) << init.message();

  std::vector<int32_t> ids(longest + 1);
  int mismatches = 0;
  for (const GoldenCase& c : cases) {
    size_t n = 0;
    const Status s = tokenizer.Encode(c.text, true, ids.data(), ids.size(), &n);
    ASSERT_TRUE(s.ok()) << "line " << c.line << ": " << s.message();
    const std::vector<int32_t> got(ids.begin(), ids.begin() + static_cast<ptrdiff_t>(n));
    EXPECT_EQ(got, c.ids) << "golden case at line " << c.line << ", text: " << c.text;
    if (got != c.ids && ++mismatches >= 20) FAIL() << "stopping after 20 mismatches";
  }
}

}  // namespace
}  // namespace staticlm
