// Tests of ChatTemplate against the model's own Jinja template. Every expected string below
// was produced independently, by rendering the template with Python's jinja2
// (ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True), as transformers'
// apply_chat_template does) in a scratch session, and pasted here as a literal.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "runtime/gguf/gguf_file.h"
#include "runtime/tokenizer/chat_template.h"
#include "runtime/tokenizer/tokenizer_from_gguf.h"

namespace staticlm {
namespace {

constexpr std::string_view kSmolDefaultSystem =
    "You are a helpful AI assistant named SmolLM, trained by Hugging Face";

std::string Format(const ChatTemplate& t, std::vector<ChatMessage> msgs, bool gen) {
  std::vector<char> buf(4096);
  size_t n = 0;
  const Status s = t.FormatChat(msgs.data(), msgs.size(), gen, buf.data(), buf.size(), &n);
  EXPECT_TRUE(s.ok()) << s.message();
  return std::string(buf.data(), n);
}

std::string Continue(const ChatTemplate& t, std::vector<ChatMessage> msgs, bool gen) {
  std::vector<char> buf(4096);
  size_t n = 0;
  const Status s = t.FormatContinuation(msgs.data(), msgs.size(), gen, buf.data(), buf.size(), &n);
  EXPECT_TRUE(s.ok()) << s.message();
  return std::string(buf.data(), n);
}

class ModelChatTemplateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    gguf::GgufFile file;
    const Status open = file.Open(STATICLM_DEFAULT_MODEL);
    if (!open.ok()) GTEST_SKIP() << "model not available: " << open.message();
    const Status s = InitChatTemplateFromGguf(file, {}, &chat_);
    ASSERT_TRUE(s.ok()) << s.message();
  }
  ChatTemplate chat_;
};

TEST_F(ModelChatTemplateTest, ExtractsTheDefaultSystemMessage) {
  EXPECT_TRUE(chat_.inserts_default_system());
  EXPECT_EQ(chat_.default_system(), kSmolDefaultSystem);
}

TEST_F(ModelChatTemplateTest, SystemAndUser) {
  EXPECT_EQ(Format(chat_, {{"system", "You are terse."}, {"user", "Hi there"}}, true),
            "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi "
            "there<|im_end|>\n<|im_start|>assistant\n");
}

TEST_F(ModelChatTemplateTest, UserOnlyGetsTheDefaultSystem) {
  EXPECT_EQ(Format(chat_, {{"user", "What is 2+2?"}}, true),
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
            "Face<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n");
}

TEST_F(ModelChatTemplateTest, MultiTurn) {
  EXPECT_EQ(
      Format(chat_,
             {{"user", "Hello"}, {"assistant", "Hi! How can I help?"}, {"user", "Tell me a joke."}},
             true),
      "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
      "Face<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi! How "
      "can I help?<|im_end|>\n<|im_start|>user\nTell me a "
      "joke.<|im_end|>\n<|im_start|>assistant\n");
}

TEST_F(ModelChatTemplateTest, WithoutGenerationPrompt) {
  EXPECT_EQ(Format(chat_, {{"user", "Hello"}, {"assistant", "Hi! How can I help?"}}, false),
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
            "Face<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi! How "
            "can I help?<|im_end|>\n");
}

TEST_F(ModelChatTemplateTest, NoMessagesIsJustTheGenerationPrompt) {
  EXPECT_EQ(Format(chat_, {}, true), "<|im_start|>assistant\n");
}

TEST_F(ModelChatTemplateTest, ContinuationCompletesTheFullRendering) {
  // The cache holds the first turn up to the reply's <|im_end|> token (not the newline after
  // it); the continuation must make up exactly the rest of the full rendering.
  const std::string first =
      Format(chat_, {{"user", "Hello"}, {"assistant", "Hi! How can I help?"}}, false);
  ASSERT_EQ(first.back(), '\n');
  const std::string cached = first.substr(0, first.size() - 1);
  const std::string next = Continue(chat_, {{"user", "Tell me a joke."}}, true);
  EXPECT_EQ(next, "\n<|im_start|>user\nTell me a joke.<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(
      cached + next,
      Format(chat_,
             {{"user", "Hello"}, {"assistant", "Hi! How can I help?"}, {"user", "Tell me a joke."}},
             true));
  EXPECT_EQ(Continue(chat_, {{"user", "x"}}, false), "\n<|im_start|>user\nx<|im_end|>\n");
}

TEST_F(ModelChatTemplateTest, RejectsSmallBuffersAndNullText) {
  const ChatMessage msgs[] = {{"user", "Hello"}};
  char buf[32];
  size_t n = 5;
  EXPECT_EQ(chat_.FormatChat(msgs, 1, true, buf, sizeof(buf), &n).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(chat_.FormatContinuation(msgs, 1, true, buf, 10, &n).code(),
            StatusCode::kInvalidArgument);
  const ChatMessage null_content[] = {{"user", nullptr}};
  std::vector<char> big(1024);
  EXPECT_EQ(chat_.FormatChat(null_content, 1, true, big.data(), big.size(), &n).code(),
            StatusCode::kInvalidArgument);
  // Exactly enough room succeeds.
  const std::string want = Format(chat_, {{"user", "Hello"}}, true);
  EXPECT_TRUE(chat_.FormatChat(msgs, 1, true, big.data(), want.size(), &n).ok());
  EXPECT_EQ(n, want.size());
}

// Other spellings of the same ChatML template; expected outputs rendered with jinja2 too.
TEST(ChatTemplateVariantsTest, PrettyPrintedWithTrimMarkers) {
  const char* jinja = R"({%- for message in messages %}
    {%- if loop.first and messages[0].role != "system" %}
        {{- "<|im_start|>system\nBe brief.<|im_end|>\n" }}
    {%- endif %}
    {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
)";
  ChatTemplate t;
  const Status s = t.Init(jinja);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(t.default_system(), "Be brief.");
  EXPECT_EQ(Format(t, {{"user", "Hi"}}, true),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_"
            "start|>assistant\n");
  EXPECT_EQ(Format(t, {{"system", "S"}, {"user", "Hi"}}, true),
            "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>"
            "assistant\n");
}

TEST(ChatTemplateVariantsTest, PlainChatMlHasNoDefaultSystem) {
  ChatTemplate t;
  ASSERT_TRUE(t.Init("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
                     "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if "
                     "add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
                  .ok());
  EXPECT_FALSE(t.inserts_default_system());
  EXPECT_EQ(Format(t, {{"user", "Hi"}}, true),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplateVariantsTest, WhitespaceThatJinjaDropsIsAllowed) {
  // trim_blocks eats the newline after each block tag, lstrip_blocks the indent before one.
  ChatTemplate t;
  const Status s = t.Init(
      "{% for message in messages %}\n{{'<|im_start|>' + message['role'] + '\\n' + "
      "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}\n  {% if add_generation_prompt "
      "%}{{ '<|im_start|>assistant\\n' }}{% endif %}\n");
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(Format(t, {{"user", "Hi"}}, true),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplateVariantsTest, DefaultSystemBeforeTheLoop) {
  ChatTemplate t;
  ASSERT_TRUE(t.Init("{% if messages[0]['role'] != 'system' %}{{ "
                     "'<|im_start|>system\\nDefault.<|im_end|>\\n' }}{% endif %}{% for message in "
                     "messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] "
                     "+ '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ "
                     "'<|im_start|>assistant\\n' }}{% endif %}")
                  .ok());
  EXPECT_EQ(Format(t, {{"user", "Hi"}}, true),
            "<|im_start|>system\nDefault.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>"
            "assistant\n");
}

TEST(ChatTemplateVariantsTest, RejectsWhatItDoesNotReproduce) {
  const char* unsupported[] = {
      "",
      // Prints a newline between messages (rendered by jinja2 with a blank line): not ChatML.
      "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
      "message['content'] + '<|im_end|>' + '\\n'}}\n  {% endfor %}{% if add_generation_prompt "
      "%}{{ '<|im_start|>assistant\\n' }}{% endif %}",
      // Spaces after an expression on the same line are printed (jinja2: "...<|im_end|>\n  ").
      "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
      "message['content'] + '<|im_end|>' + '\\n'}}  {% endfor %}{% if add_generation_prompt "
      "%}{{ '<|im_start|>assistant\\n' }}{% endif %}",
      // Llama 3.
      "{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + "
      "'<|end_header_id|>\\n\\n' + message['content'] + '<|eot_id|>' }}{% endfor %}",
      // ChatML that trims the content.
      "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
      "message['content'] | trim + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt "
      "%}{{ '<|im_start|>assistant\\n' }}{% endif %}",
      // Unterminated.
      "{% for message in messages %}{{'<|im_start|>' + message['role']",
  };
  for (const char* jinja : unsupported) {
    ChatTemplate t;
    EXPECT_EQ(t.Init(jinja).code(), StatusCode::kUnsupported) << jinja;
    char buf[64];
    size_t n = 0;
    const ChatMessage m[] = {{"user", "x"}};
    EXPECT_EQ(t.FormatChat(m, 1, true, buf, sizeof(buf), &n).code(), StatusCode::kInvalidState);
  }
}

}  // namespace
}  // namespace staticlm
