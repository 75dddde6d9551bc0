// Tokenizers read from tokenizer.json allocate nothing in the run phase: Encode (every style:
// the Llama 3 and Qwen2 splits, NFC, byte fallback, Metaspace, added tokens with lstrip and
// rstrip) on ordinary and worst-case texts of the init limit, and the errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "platform/alloc_counter.h"
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/tokenizer/tokenizer_json.h"

namespace staticlm {
namespace {

namespace counter = staticlm::alloc_counter;

constexpr size_t kMaxTextBytes = 2048;

std::string Repeat(const std::string& unit) {
  std::string s;
  while (s.size() + unit.size() <= kMaxTextBytes) s += unit;
  return s;
}

// Texts built before counting starts: NFC's longest growth (Hangul syllables, U+0344), runs
// of marks to reorder, digits, spaces and specials.
std::vector<std::string> Texts() {
  return {"",
          "It's 2024: caf\xC3\xA9 na\xC3\xAFve\n\n\t<|im_start|>hi<|im_end|> [MASK] <tool>  x",
          Repeat("\xEA\xB0\x81"),               // U+AC01: three jamo each
          Repeat("\xCD\x84"),                   // U+0344: two marks
          Repeat("a\xCC\x81\xCC\xA3\xCC\x88"),  // marks out of canonical order
          Repeat("1234567890"),
          Repeat(" "),
          Repeat("\xF0\x9F\x98\x80"),
          Repeat("<s>")};
}

void EncodeAll(Tokenizer& tok, const std::vector<std::string>& texts, bool* ok) {
  static int32_t ids[8 * kMaxTextBytes];
  for (const std::string& t : texts) {
    for (bool parse_special : {true, false}) {
      size_t n = 0;
      if (!tok.Encode(t, parse_special, ids, sizeof(ids) / sizeof(ids[0]), &n).ok()) *ok = false;
    }
  }
  size_t n = 0;
  if (tok.Encode("abc\xFF", true, ids, 16, &n).ok()) *ok = false;
  if (tok.Encode("abc abc", true, ids, 1, &n).ok()) *ok = false;
}

class TokenizerJsonNoAllocTest : public testing::TestWithParam<const char*> {};

TEST_P(TokenizerJsonNoAllocTest, EncodeAllocatesNothing) {
  if (!counter::Available()) GTEST_SKIP() << "allocation counting is off in sanitizer builds";
  const std::string dir = std::string(STATICLM_GOLDEN_DIR) + "/tokenizer_json/" + GetParam();
  Tokenizer tok;
  const Status init = InitTokenizerFromJsonFiles((dir + "/tokenizer.json").c_str(), nullptr,
                                                 kMaxTextBytes, &tok, nullptr);
  ASSERT_TRUE(init.ok()) << init.message();
  const std::vector<std::string> texts = Texts();
  bool ok = true;
  counter::Start();
  EncodeAll(tok, texts, &ok);
  counter::Stop();
  EXPECT_TRUE(ok);
  char where[4096];
  counter::DescribeFirstEvent(where, sizeof(where));
  EXPECT_EQ(counter::Allocations(), 0u) << where;
  EXPECT_EQ(counter::Frees(), 0u) << where;
}

INSTANTIATE_TEST_SUITE_P(Styles, TokenizerJsonNoAllocTest,
                         testing::Values("gpt2", "smollm", "llama3", "qwen2", "spm", "metaspace",
                                         "metaspace_split", "gemma", "added", "digits"),
                         [](const testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

}  // namespace
}  // namespace staticlm
