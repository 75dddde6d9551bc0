// Chat formats (runtime/tokenizer/chat_formats.h) against transformers' own rendering: every
// template and conversation in tests/golden/chat_formats.txt (written by
// tests/reference/make_chat_format_golden.py from Gemma 3's real template, SmolLM2's from its
// GGUF, spellings of Gemma's and Mistral NeMo's real template) is formatted by ChatTemplate and
// must equal the golden bytes.
// Also: BOS is never doubled, continuations complete the full rendering, forced formats, and
// the one-line errors for a model without a template or with one no format recognises.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/gguf/gguf_file.h"
#include "runtime/tokenizer/chat_formats.h"
#include "runtime/tokenizer/chat_template.h"
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/tokenizer/tokenizer_from_gguf.h"
#include "staticlm/staticlm.h"
#include "tests/support/context_helpers.h"
#include "tests/support/gguf_metadata_only.h"
#include "tests/support/gguf_writer.h"
#include "tests/support/temp_path.h"

namespace staticlm {
namespace {

struct Message {
  std::string role, content;
};

struct GoldenCase {
  std::string name, templ;
  bool gen = false;
  std::vector<Message> messages;
  bool error = false;  // the template raised
  std::string text;
};

struct Golden {
  std::map<std::string, std::string> templates;
  std::vector<GoldenCase> cases;
};

std::string FromHex(const std::string& hex) {
  if (hex == "-") return "";
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

Golden ReadGolden() {
  Golden g;
  std::ifstream in(std::string(STATICLM_GOLDEN_DIR) + "/chat_formats.txt");
  EXPECT_TRUE(in.good()) << "tests/golden/chat_formats.txt is missing";
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream f(line);
    std::string key, a, b, c;
    f >> key >> a >> b >> c;
    if (key == "template") {
      g.templates[a] = FromHex(b);
    } else if (key == "case") {
      g.cases.push_back({a, b, c == "1", {}, false, ""});
    } else if (key == "message") {
      g.cases.back().messages.push_back({a, FromHex(b)});
    } else if (key == "text") {
      g.cases.back().text = FromHex(a);
    } else if (key == "error") {
      g.cases.back().error = true;
    } else {
      ADD_FAILURE() << "unexpected golden line: " << line;
    }
  }
  return g;
}

const Golden& TheGolden() {
  static const Golden g = ReadGolden();
  return g;
}

Status FormatCase(const ChatTemplate& t, const GoldenCase& c, std::string* out) {
  std::vector<ChatMessage> msgs;
  for (const Message& m : c.messages) msgs.push_back({m.role.c_str(), m.content.c_str()});
  std::vector<char> buf(8192);
  size_t n = 0;
  const Status s = t.FormatChat(msgs.data(), msgs.size(), c.gen, buf.data(), buf.size(), &n);
  out->assign(buf.data(), n);
  return s;
}

// The golden text and staticlm's must be equal byte for byte; a raised template must be a
// kInvalidArgument.
void ExpectCaseMatches(const ChatTemplate& t, const GoldenCase& c, const std::string& label) {
  std::string got;
  const Status s = FormatCase(t, c, &got);
  if (c.error) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << label << " " << c.name;
    return;
  }
  ASSERT_TRUE(s.ok()) << label << " " << c.name << ": " << s.message();
  EXPECT_EQ(got, c.text) << label << " " << c.name;
}

std::string ExpectedFormat(const std::string& templ) {
  if (templ == "mistral_nemo") return "mistral-nemo";
  return templ.rfind("gemma", 0) == 0 ? "gemma" : "chatml";
}

// What the golden rendering wrote for {{ bos_token }}.
const char* BosText(const std::string& templ) {
  return templ == "mistral_nemo" ? "<s>" : "<bos>";
}

TEST(ChatFormatsGoldenTest, EveryTemplateIsRecognisedAndEveryCaseMatches) {
  const Golden& g = TheGolden();
  ASSERT_EQ(g.templates.size(), 7u);
  ASSERT_EQ(g.cases.size(), 7u * 14u + 6u);  // Mistral NeMo has 6 cases of its own
  for (const auto& [name, text] : g.templates) {
    ChatTemplate t;
    const Status s = t.Init(text, BosText(name));
    ASSERT_TRUE(s.ok()) << name << ": " << s.message();
    EXPECT_EQ(t.format()->name, ExpectedFormat(name)) << name;
    for (const GoldenCase& c : g.cases) {
      if (c.templ == name) ExpectCaseMatches(t, c, name);
    }
  }
}

TEST(ChatFormatsGoldenTest, RecognisedParameters) {
  const Golden& g = TheGolden();
  ChatTemplate t;
  ASSERT_TRUE(t.Init(g.templates.at("gemma3"), "<bos>").ok());
  EXPECT_TRUE(t.params().starts_with_bos);
  EXPECT_TRUE(t.params().alternates);
  EXPECT_TRUE(t.params().trims_content);
  EXPECT_EQ(t.params().system_separator, "\n\n");
  ASSERT_TRUE(t.Init(g.templates.at("gemma3_single_newline")).ok());
  EXPECT_EQ(t.params().system_separator, "\n");
  ASSERT_TRUE(t.Init(g.templates.at("gemma3_no_bos")).ok());
  EXPECT_FALSE(t.params().starts_with_bos);
  ASSERT_TRUE(t.Init(g.templates.at("smollm2")).ok());
  EXPECT_TRUE(t.inserts_default_system());
  EXPECT_FALSE(t.params().trims_content);
}

// With the tokenizer adding BOS itself (bos_text empty), the text is the golden one without
// its leading "<bos>".
TEST(ChatFormatsGoldenTest, BosIsLeftToTheTokenizer) {
  const Golden& g = TheGolden();
  ChatTemplate t;
  ASSERT_TRUE(t.Init(g.templates.at("gemma3")).ok());
  for (const GoldenCase& c : g.cases) {
    if (c.templ != "gemma3" || c.error) continue;
    ASSERT_EQ(c.text.rfind("<bos>", 0), 0u) << c.name;
    std::string got;
    ASSERT_TRUE(FormatCase(t, c, &got).ok()) << c.name;
    EXPECT_EQ(got, c.text.substr(5)) << c.name;
  }
}

// Forcing "gemma" gives exactly the real Gemma 3 template's rendering.
TEST(ChatFormatsGoldenTest, ForcedGemmaIsTheReferenceTemplate) {
  ChatTemplate t;
  ASSERT_TRUE(t.InitFormat("gemma", "<bos>").ok());
  for (const GoldenCase& c : TheGolden().cases) {
    if (c.templ == "gemma3") ExpectCaseMatches(t, c, "forced gemma");
  }
}

// Forcing "mistral-nemo" gives exactly the real Mistral NeMo template's rendering.
TEST(ChatFormatsGoldenTest, ForcedMistralNemoIsTheReferenceTemplate) {
  ChatTemplate t;
  ASSERT_TRUE(t.InitFormat("mistral-nemo", "<s>").ok());
  int checked = 0;
  for (const GoldenCase& c : TheGolden().cases) {
    if (c.templ != "mistral_nemo") continue;
    ExpectCaseMatches(t, c, "forced mistral-nemo");
    ++checked;
  }
  EXPECT_EQ(checked, 20);
}

// Forced "chatml" has no default system message: it matches SmolLM2's template wherever the
// conversation starts with a system message.
TEST(ChatFormatsGoldenTest, ForcedChatMlMatchesWhenASystemMessageLeads) {
  ChatTemplate t;
  ASSERT_TRUE(t.InitFormat("chatml").ok());
  int checked = 0;
  for (const GoldenCase& c : TheGolden().cases) {
    if (c.templ != "smollm2" || c.messages.empty() || c.messages[0].role != "system") continue;
    ExpectCaseMatches(t, c, "forced chatml");
    ++checked;
  }
  EXPECT_GE(checked, 5);
}

const GoldenCase& Case(const std::string& templ, const std::string& name) {
  for (const GoldenCase& c : TheGolden().cases) {
    if (c.templ == templ && c.name == name) return c;
  }
  static const GoldenCase none;
  ADD_FAILURE() << "no golden case " << templ << " " << name;
  return none;
}

// The cache holds the first exchange up to the reply's end-of-turn token; the continuation
// must make up exactly the rest of the golden multi-turn rendering.
TEST(ChatFormatsGoldenTest, ContinuationCompletesTheGoldenRendering) {
  for (const char* templ : {"gemma3", "smollm2", "mistral_nemo"}) {
    ChatTemplate t;
    ASSERT_TRUE(t.Init(TheGolden().templates.at(templ), BosText(templ)).ok());
    const std::string first = Case(templ, "multi_turn_no_prompt").text;
    const std::string after = std::string(t.format()->after_turn);
    ASSERT_EQ(first.substr(first.size() - after.size()), after);
    const std::string cached = first.substr(0, first.size() - after.size());
    ASSERT_EQ(cached.substr(cached.size() - t.format()->end_of_turn.size()),
              t.format()->end_of_turn);
    const ChatMessage next[] = {{"user", "Tell me a joke."}};
    char buf[256];
    size_t n = 0;
    ASSERT_TRUE(t.FormatContinuation(next, 1, true, buf, sizeof(buf), &n).ok());
    EXPECT_EQ(cached + std::string(buf, n), Case(templ, "multi_turn").text) << templ;
  }
}

TEST(ChatFormatsTest, TableNamesAndFamilies) {
  EXPECT_STREQ(ChatFormatNames(), "chatml, gemma, llama3, phi3, mistral, mistral-nemo");
  ASSERT_NE(FindChatFormat("chatml"), nullptr);
  ASSERT_NE(FindChatFormat("gemma"), nullptr);
  EXPECT_NE(FindChatFormat("llama3"), nullptr);
  EXPECT_EQ(FindChatFormat("llama2"), nullptr);
  EXPECT_STREQ(ChatFormatOfFamily("gemma3")->name, "gemma");
  EXPECT_STREQ(ChatFormatOfFamily("qwen2")->name, "chatml");
  EXPECT_EQ(ChatFormatOfFamily("llama"), nullptr);
  EXPECT_EQ(ChatFormatOfFamily("gemma3n2"), nullptr);  // whole names only
  EXPECT_EQ(ChatFormatOfFamily(""), nullptr);
  EXPECT_EQ(FindChatFormat("gemma")->end_of_turn, "<end_of_turn>");
  EXPECT_EQ(FindChatFormat("chatml")->end_of_turn, "<|im_end|>");
  ChatTemplate t;
  const Status s = t.InitFormat("llama2");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_STREQ(
      s.message(),
      "unknown chat format 'llama2': expected chatml, gemma, llama3, phi3, mistral, mistral-nemo");
}

TEST(ChatFormatsTest, UnknownTemplatesAreNotMisformatted) {
  const char* unknown[] = {
      // Gemma 2 / Gemma 1: raises on a system message, trims inside one expression.
      "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not "
      "supported') }}{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != "
      "(loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate "
      "user/assistant/user/assistant/...') }}{% endif %}{% if (message['role'] == 'assistant') "
      "%}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ "
      "'<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}{% "
      "endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\\n'}}{% endif %}",
      // Gemma 3 with a default system text when there is none.
      "{%- if messages[0]['role'] == 'system' -%}{%- set first_user_prefix = "
      "messages[0]['content'] + '\\n\\n' -%}{%- set loop_messages = messages[1:] -%}{%- else "
      "-%}{%- set first_user_prefix = 'Be kind.\\n\\n' -%}{%- set loop_messages = messages "
      "-%}{%- endif -%}{%- for message in loop_messages -%}{%- if (message['role'] == "
      "'assistant') -%}{%- set role = 'model' -%}{%- else -%}{%- set role = message['role'] "
      "-%}{%- endif -%}{{ '<start_of_turn>' + role + '\\n' + (first_user_prefix if loop.first "
      "else '') }}{{ message['content'] | trim }}{{ '<end_of_turn>\\n' }}{%- endfor -%}{%- if "
      "add_generation_prompt -%}{{'<start_of_turn>model\\n'}}{%- endif -%}",
      // Llama 3.
      "{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + "
      "'<|end_header_id|>\\n\\n' + message['content'] + '<|eot_id|>' }}{% endfor %}",
  };
  for (const char* jinja : unknown) {
    ChatTemplate t;
    const Status s = t.Init(jinja);
    EXPECT_EQ(s.code(), StatusCode::kUnsupported) << jinja;
    EXPECT_EQ(t.format(), nullptr);
    const ChatMessage m[] = {{"user", "x"}};
    char buf[64];
    size_t n = 0;
    EXPECT_EQ(t.FormatChat(m, 1, true, buf, sizeof(buf), &n).code(), StatusCode::kInvalidState);
  }
}

// The real Gemma 3 template with one piece changed is no longer Gemma's.
TEST(ChatFormatsTest, AlteredGemmaTemplatesAreRejected) {
  const std::string real = TheGolden().templates.at("gemma3");
  const std::pair<const char*, const char*> edits[] = {
      {"set role = \"model\"", "set role = \"assistant\""},
      {"{{ '<end_of_turn>\n' }}", "{{ '<end_of_turn>\n\n' }}"},
      {"{{ message['content'] | trim }}", "{{ message['content'] | upper }}"},
      {"{{'<start_of_turn>model\n'}}", "{{'<start_of_turn>model\n\n'}}"},
      {"(first_user_prefix if loop.first else \"\")", "first_user_prefix"},
  };
  for (const auto& [from, to] : edits) {
    std::string altered = real;
    const size_t at = altered.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    altered.replace(at, std::string(from).size(), to);
    ChatTemplate t;
    EXPECT_EQ(t.Init(altered).code(), StatusCode::kUnsupported) << to;
  }
}

// The real Mistral NeMo template with one piece that prints for a plain conversation changed,
// or a tool part that leaks out of its branch, is no longer Mistral NeMo's.
TEST(ChatFormatsTest, AlteredMistralNemoTemplatesAreRejected) {
  const std::string real = TheGolden().templates.at("mistral_nemo");
  const std::pair<const char*, const char*> edits[] = {
      {"\"[INST]\" + message[\"content\"]", "\"[INST] \" + message[\"content\"]"},
      {"system_message + \"\\n\\n\"", "system_message + \"\\n\""},
      {"{%- if loop.last and system_message", "{%- if loop.first and system_message"},
      {"message[\"content\"] + eos_token", "message[\"content\"]|trim + eos_token"},
      {"{{- bos_token }}", ""},
      {"{%- elif message[\"role\"] == \"assistant\" %}", "{%- endif %}{%- if true %}"},
      {"{{- \"[/AVAILABLE_TOOLS]\" }}\n            {%- endif %}",
       "{%- endif %}{{- \"[/AVAILABLE_TOOLS]\" }}"},
      {"(ns.index % 2 == 0)", "(ns.index % 2 == 1)"},
  };
  for (const auto& [from, to] : edits) {
    std::string altered = real;
    const size_t at = altered.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    altered.replace(at, std::string(from).size(), to);
    ChatTemplate t;
    EXPECT_EQ(t.Init(altered).code(), StatusCode::kUnsupported) << to;
  }
}

// A metadata-only GGUF file with the keys chat formatting reads.
Status OpenChatFile(const std::string& architecture, const char* chat_template,
                    std::vector<uint8_t>* bytes, gguf::GgufFile* file) {
  test::GgufWriter w;
  w.AddString("general.architecture", architecture);
  if (chat_template != nullptr) w.AddString("tokenizer.chat_template", chat_template);
  const std::string path = test::TempPath("chat_formats.gguf");
  STATICLM_RETURN_IF_ERROR(w.WriteFile(path.c_str()));
  return test::OpenMetadataOnly(path.c_str(), bytes, file);
}

std::string ChatError(const std::string& architecture, const char* chat_template) {
  std::vector<uint8_t> bytes;
  gguf::GgufFile file;
  EXPECT_TRUE(OpenChatFile(architecture, chat_template, &bytes, &file).ok());
  ChatTemplate t;
  EXPECT_TRUE(InitChatTemplateFromGguf(file, {}, &t).ok());  // never an error at load
  EXPECT_EQ(t.format(), nullptr);
  const ChatMessage m[] = {{"user", "x"}};
  char buf[64];
  size_t n = 0;
  const Status s = t.FormatChat(m, 1, true, buf, sizeof(buf), &n);
  EXPECT_EQ(s.code(), StatusCode::kInvalidState);
  return s.message();
}

TEST(ChatFormatsTest, NoTemplateNamesTheFamilysFormatAndTheFlag) {
  EXPECT_EQ(ChatError("gemma3", nullptr),
            "the model has no chat template (tokenizer.chat_template); its family (gemma3) uses "
            "\"gemma\": choose it with --chat-template gemma (staticlm_set_chat_format)");
  EXPECT_EQ(ChatError("llama", nullptr),
            "the model has no chat template (tokenizer.chat_template): choose a format with "
            "--chat-template NAME (chatml, gemma, llama3, phi3, mistral, mistral-nemo; "
            "staticlm_set_chat_format)");
}

TEST(ChatFormatsTest, UnknownTemplateNamesTheFlag) {
  EXPECT_EQ(ChatError("llama", "{{ messages }}"),
            "the model's chat template (tokenizer.chat_template) is not one staticlm recognises "
            "(chatml, gemma, llama3, phi3, mistral, mistral-nemo): choose a format with "
            "--chat-template NAME "
            "(staticlm_set_chat_format)");
}

// Gemma 3 270M (base): no template in the file. Forced "gemma", the text tokenizes with
// exactly one BOS, then <start_of_turn>.
TEST(ChatFormatsTest, GemmaModelGetsOneBos) {
  std::vector<uint8_t> bytes;
  gguf::GgufFile file;
  if (!test::OpenMetadataOnly(STATICLM_GEMMA_MODEL, &bytes, &file).ok()) {
    GTEST_SKIP() << "Gemma 3 270M not available";
  }
  ASSERT_EQ(file.FindKey("tokenizer.chat_template"), nullptr);
  Tokenizer tok;
  ASSERT_TRUE(InitTokenizerFromGguf(file, 4096, &tok).ok());
  ASSERT_TRUE(tok.add_bos());
  ChatTemplate t;
  ASSERT_TRUE(t.InitFormat("gemma", {}).ok());  // the engine passes "" when add_bos is set
  const ChatMessage m[] = {{"system", "Be brief."}, {"user", "Hi"}};
  char text[256];
  size_t n = 0;
  ASSERT_TRUE(t.FormatChat(m, 2, true, text, sizeof(text), &n).ok());
  int32_t ids[256];
  size_t n_ids = 0;
  ASSERT_TRUE(tok.Encode(std::string_view(text, n), true, ids, 256, &n_ids).ok());
  ASSERT_GE(n_ids, 3u);
  EXPECT_EQ(ids[0], tok.bos_id());
  EXPECT_EQ(tok.TokenText(ids[1]), "<start_of_turn>");
  for (size_t i = 1; i < n_ids; ++i) EXPECT_NE(ids[i], tok.bos_id()) << i;
  ASSERT_GE(n_ids, 5u);  // … <end_of_turn> \n <start_of_turn> model \n
  EXPECT_EQ(tok.TokenText(ids[n_ids - 3]), "<start_of_turn>");
  EXPECT_EQ(tok.TokenText(ids[n_ids - 5]), "<end_of_turn>");
  EXPECT_TRUE(tok.IsEndOfGeneration(ids[n_ids - 5]));  // generation stops at the turn's end
}

// Through the C API on a model without a template: it loads and tokenizes plain text; chat
// fails in one line until a format is forced.
TEST(ChatFormatsCApiTest, NoTemplateThenForcedFormat) {
  const std::string path = test::TempPath("chat_formats_tiny.gguf");
  test::TinyLlamaOptions options;
  options.chat_template = "";
  ASSERT_TRUE(test::WriteTinyLlama(path.c_str(), options).ok());
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.max_context = 64;
  staticlm_context* raw = nullptr;
  char error[256];
  ASSERT_EQ(staticlm_create(path.c_str(), &limits, &raw, error, sizeof(error)), STATICLM_OK)
      << error;
  test::ContextPtr ctx(raw);
  int32_t ids[64];
  size_t n = 0;
  EXPECT_EQ(staticlm_tokenize(ctx.get(), "hello", 5, 0, ids, 64, &n), STATICLM_OK);

  staticlm_chat_format_info info = {};
  EXPECT_EQ(staticlm_chat_format(ctx.get(), &info), STATICLM_INVALID_STATE);
  EXPECT_NE(std::string(staticlm_last_error(ctx.get())).find("--chat-template NAME"),
            std::string::npos);
  const staticlm_chat_message m[] = {{"user", "Hi"}};
  char text[128];
  EXPECT_EQ(staticlm_format_chat(ctx.get(), m, 1, 1, 0, text, sizeof(text), &n),
            STATICLM_INVALID_STATE);

  EXPECT_EQ(staticlm_set_chat_format(ctx.get(), "nope"), STATICLM_INVALID_ARGUMENT);
  EXPECT_STREQ(
      staticlm_last_error(ctx.get()),
      "unknown chat format 'nope': expected chatml, gemma, llama3, phi3, mistral, mistral-nemo");
  ASSERT_EQ(staticlm_set_chat_format(ctx.get(), "gemma"), STATICLM_OK);
  ASSERT_EQ(staticlm_chat_format(ctx.get(), &info), STATICLM_OK);
  EXPECT_STREQ(info.name, "gemma");
  EXPECT_STREQ(info.end_of_turn, "<end_of_turn>");
  EXPECT_EQ(info.system_turn, 0);
  ASSERT_EQ(staticlm_format_chat(ctx.get(), m, 1, 1, 0, text, sizeof(text), &n), STATICLM_OK);
  // The tiny model's tokenizer does not add BOS, so the template's BOS is written as text
  // (its BOS is SmolLM2's, id 1).
  EXPECT_EQ(std::string(text, n),
            "<|im_start|><start_of_turn>user\nHi<end_of_turn>\n"
            "<start_of_turn>model\n");

  ASSERT_EQ(staticlm_set_chat_format(ctx.get(), "chatml"), STATICLM_OK);
  ASSERT_EQ(staticlm_chat_format(ctx.get(), &info), STATICLM_OK);
  EXPECT_STREQ(info.end_of_turn, "<|im_end|>");
  EXPECT_EQ(info.system_turn, 1);
  ASSERT_EQ(staticlm_set_chat_format(ctx.get(), nullptr), STATICLM_OK);  // back to the file's
  EXPECT_EQ(staticlm_chat_format(ctx.get(), &info), STATICLM_INVALID_STATE);
}

}  // namespace
}  // namespace staticlm
