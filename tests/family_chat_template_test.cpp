// The chat templates of the model families of issue 14 against transformers: each family's GGUF
// (tests/models/families/<family>/, made by tests/reference/make_family_models.py with the real
// model's template: Llama 3.2 Instruct, Phi-3.5 mini instruct, Mistral 7B Instruct v0.2, Qwen2.5
// Instruct, Qwen3) holds tokenizer.chat_template; ChatTemplate must recognise it as the family's
// format and render every committed conversation (tests/golden/families/<family>.txt, `chat`
// blocks: apply_chat_template's text) byte for byte, refusing the ones the template raises on.
// Also: the committed real template files are recognised as the same format, and the forced
// format (--chat-template NAME) renders the same conversations as the real template.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/gguf/gguf_file.h"
#include "runtime/tokenizer/chat_formats.h"
#include "runtime/tokenizer/chat_template.h"
#include "tests/support/family_golden.h"

namespace staticlm {
namespace {

struct Family {
  const char* family;    // tests/models/families/<family>
  const char* jinja;     // tests/reference/chat_templates/<jinja>.jinja
  const char* format;    // the ChatFormat it must be recognised as
  const char* bos_text;  // what {{ bos_token }} renders (transformers' text)
  // The forced format renders as the real template (not for Qwen2.5 and Qwen3: forced "chatml"
  // has neither a default system message nor Qwen3's rewriting of <think> blocks).
  bool forced_equal;
};

constexpr Family kFamilies[] = {
    {"llama", "llama3", "llama3", "<|begin_of_text|>", true},
    {"phi3", "phi3", "phi3", "<s>", true},
    {"mistral", "mistral", "mistral", "<s>", true},
    {"qwen2", "qwen2", "chatml", "", false},
    {"qwen3", "qwen3", "chatml", "", false},
};

std::string TemplateOfGguf(const Family& f) {
  const std::string path = std::string(STATICLM_GOLDEN_DIR "/../models/families/") + f.family +
                           "/" + f.family + "-f16.gguf";
  gguf::GgufFile file;
  const Status opened = file.Open(path.c_str());
  EXPECT_TRUE(opened.ok()) << opened.message();
  std::string_view text;
  if (opened.ok()) {
    const Status read = file.GetString("tokenizer.chat_template", &text);
    EXPECT_TRUE(read.ok()) << read.message();
  }
  return std::string(text);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

test::FamilyGolden GoldenOf(const Family& f) {
  test::FamilyGolden golden;
  std::string error;
  EXPECT_TRUE(test::ReadFamilyGolden(
      std::string(STATICLM_GOLDEN_DIR "/families/") + f.family + ".txt", &golden, &error))
      << error;
  EXPECT_FALSE(golden.chats.empty()) << f.family;
  return golden;
}

// Renders every golden conversation with `t` and compares with transformers' text.
void ExpectGoldenChats(const ChatTemplate& t, const test::FamilyGolden& golden,
                       const std::string& label) {
  for (const test::FamilyChatCase& c : golden.chats) {
    std::vector<ChatMessage> msgs;
    for (const auto& [role, content] : c.messages) msgs.push_back({role.c_str(), content.c_str()});
    std::string out(4096, '\0');
    size_t n = 0;
    const Status s =
        t.FormatChat(msgs.data(), msgs.size(), c.add_generation_prompt, out.data(), out.size(), &n);
    if (c.raises) {
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << label << " " << c.name;
      continue;
    }
    ASSERT_TRUE(s.ok()) << label << " " << c.name << ": " << s.message();
    EXPECT_EQ(out.substr(0, n), c.rendered) << label << " " << c.name;
  }
}

class FamilyChatTemplateTest : public ::testing::TestWithParam<Family> {};

TEST_P(FamilyChatTemplateTest, GgufTemplateRendersLikeTransformers) {
  const Family& f = GetParam();
  ChatTemplate t;
  const Status s = t.Init(TemplateOfGguf(f), f.bos_text);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_NE(t.format(), nullptr);
  EXPECT_STREQ(t.format()->name, f.format);
  ExpectGoldenChats(t, GoldenOf(f), std::string(f.family) + " (GGUF template)");
}

TEST_P(FamilyChatTemplateTest, RealTemplateFileIsRecognised) {
  const Family& f = GetParam();
  const std::string jinja = ReadFile(
      std::string(STATICLM_GOLDEN_DIR "/../reference/chat_templates/") + f.jinja + ".jinja");
  const ChatFormat* format = nullptr;
  ChatParams params;
  const Status s = RecogniseChatTemplate(jinja, &format, &params);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_STREQ(format->name, f.format);
}

TEST_P(FamilyChatTemplateTest, ForcedFormatRendersLikeTheRealTemplate) {
  const Family& f = GetParam();
  if (!f.forced_equal) GTEST_SKIP() << f.format << " forced has no default system message";
  ChatTemplate t;
  ASSERT_TRUE(t.InitFormat(f.format, f.bos_text).ok());
  ExpectGoldenChats(t, GoldenOf(f), std::string(f.family) + " (forced " + f.format + ")");
}

INSTANTIATE_TEST_SUITE_P(Families, FamilyChatTemplateTest, ::testing::ValuesIn(kFamilies),
                         [](const ::testing::TestParamInfo<Family>& info) {
                           return std::string(info.param.family);
                         });

}  // namespace
}  // namespace staticlm
