// The tokenizer.json reader's checks (each unsupported or malformed field a one-line error
// naming it and its value), tokenizer_config.json, and the GGUF pre-tokenizer names that
// reach the same algorithms.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/tokenizer/tokenizer.h"
#include "runtime/tokenizer/tokenizer_json.h"
#include "tests/support/golden_files.h"

namespace staticlm {
namespace {

using nlohmann::json;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string StylePath(const std::string& style) {
  std::string path = STATICLM_GOLDEN_DIR "/tokenizer_json/";  // appended in place: GCC 12 -O3
  return path.append(style);  // warns falsely (-Warray-bounds) about the temporaries of a + chain
}

json Style(const std::string& style) {
  return json::parse(ReadFile(StylePath(style) + "/tokenizer.json"));
}

// Reads `doc`; expects failure with `code` and a one-line message holding each of `parts`.
void ExpectError(const json& doc, StatusCode code, std::vector<std::string> parts) {
  TokenizerJson out;
  const Status s = ReadTokenizerJson(doc.dump(), "", &out);
  ASSERT_FALSE(s.ok()) << "accepted: " << parts[0];
  EXPECT_EQ(s.code(), code) << s.message();
  const std::string message = s.message();
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  for (const std::string& p : parts) EXPECT_NE(message.find(p), std::string::npos) << message;
}

TEST(TokenizerJsonTest, UnsupportedPartsNameTheFieldAndValue) {
  json doc = Style("gpt2");
  doc["model"]["type"] = "WordPiece";
  ExpectError(doc, StatusCode::kUnsupported, {"model.type", "WordPiece"});

  doc = Style("llama3");
  doc["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\w+";
  ExpectError(doc, StatusCode::kUnsupported, {"pre_tokenizer.pretokenizers[0].pattern", "\\w+"});

  doc = Style("gpt2");
  doc["pre_tokenizer"] = {{"type", "Whitespace"}};
  ExpectError(doc, StatusCode::kUnsupported, {"pre_tokenizer.type", "Whitespace"});

  doc = Style("qwen2");
  doc["normalizer"] = {{"type", "NFKC"}};
  ExpectError(doc, StatusCode::kUnsupported, {"normalizer.type", "NFKC"});

  doc = Style("spm");
  doc["normalizer"]["normalizers"][1]["content"] = "_";
  ExpectError(doc, StatusCode::kUnsupported, {"normalizer.normalizers[1].pattern"});

  doc = Style("gpt2");
  doc["pre_tokenizer"]["add_prefix_space"] = true;
  ExpectError(doc, StatusCode::kUnsupported, {"pre_tokenizer.add_prefix_space", "true"});

  doc = Style("gpt2");
  doc["added_tokens"][0]["single_word"] = true;
  ExpectError(doc, StatusCode::kUnsupported, {"added_tokens[0].single_word"});

  doc = Style("gpt2");
  doc["model"]["dropout"] = 0.1;
  ExpectError(doc, StatusCode::kUnsupported, {"model.dropout", "0.1"});

  doc = Style("spm");
  doc["decoder"]["decoders"][0] = {{"type", "WordPiece"}};
  ExpectError(doc, StatusCode::kUnsupported, {"decoder.decoders[0].type", "WordPiece"});

  doc = Style("llama3");
  doc["post_processor"]["single"].push_back({{"SpecialToken", {{"id", "<|eot_id|>"}}}});
  ExpectError(doc, StatusCode::kUnsupported, {"post_processor.single"});
}

TEST(TokenizerJsonTest, MalformedFieldsAreFormatErrors) {
  json doc = Style("gpt2");
  doc["model"].erase("vocab");
  ExpectError(doc, StatusCode::kFormatError, {"model.vocab", "missing"});

  doc = Style("gpt2");
  doc["model"]["merges"][3] = 7;
  ExpectError(doc, StatusCode::kFormatError, {"model.merges[3]"});

  doc = Style("gpt2");
  doc["model"]["byte_fallback"] = "yes";
  ExpectError(doc, StatusCode::kFormatError, {"model.byte_fallback"});

  doc = Style("gpt2");
  doc["added_tokens"][0]["id"] = 16000000;  // far beyond the tokens there are
  ExpectError(doc, StatusCode::kFormatError, {"added_tokens[0].id", "16000000"});

  doc = Style("gpt2");
  doc["added_tokens"][0]["id"] = 5;  // id 5 is already another token
  ExpectError(doc, StatusCode::kFormatError, {"token id 5"});

  TokenizerJson out;
  const Status truncated = ReadTokenizerJson(Style("gpt2").dump().substr(0, 100), "", &out);
  EXPECT_EQ(truncated.code(), StatusCode::kFormatError);
  EXPECT_NE(std::string(truncated.message()).find("tokenizer.json"), std::string::npos);

  const Status config =
      ReadTokenizerJson(Style("llama3").dump(), "{\"eos_token\": \"<nope>\"}", &out);
  EXPECT_EQ(config.code(), StatusCode::kUnsupported);
  EXPECT_NE(std::string(config.message()).find("eos_token"), std::string::npos);
}

TEST(TokenizerJsonTest, ConfigSetsBosEosAndChatTemplate) {
  TokenizerJson out;
  const std::string config =
      R"({"bos_token": {"content": "<|begin_of_text|>"}, "eos_token": "<|eot_id|>",
          "add_bos_token": false, "chat_template": "{{ messages }}"})";
  ASSERT_TRUE(ReadTokenizerJson(Style("llama3").dump(), config, &out).ok());
  EXPECT_EQ(out.spec.bos_id, 0);
  EXPECT_EQ(out.spec.eos_id, 4);
  EXPECT_FALSE(out.spec.add_bos);  // the config overrides the post-processor
  EXPECT_EQ(out.chat_template, "{{ messages }}");
}

// A GGUF file naming llama-bpe, qwen2 or gpt-4o (tokenizer.ggml.pre) tokenizes as the
// tokenizer.json whose split it names: the same vocabulary, read through the GGUF names, gives
// the goldens.
TEST(TokenizerJsonTest, GgufPreNamesReachTheSameSplits) {
  for (const char* style : {"llama3", "qwen2", "gpt2", "smollm", "gpt4o"}) {
    TokenizerJson parsed;
    const std::string dir = StylePath(style);
    ASSERT_TRUE(ReadTokenizerJson(ReadFile(dir + "/tokenizer.json"), "", &parsed).ok());
    const std::string name = style == std::string("llama3")  ? "llama-bpe"
                             : style == std::string("gpt2")  ? "gpt-2"
                             : style == std::string("gpt4o") ? "gpt-4o"
                                                             : style;
    parsed.spec.has_pre_kind = false;
    parsed.spec.pre = name;
    parsed.spec.ignore_merges = false;  // the GGUF name implies it for llama-bpe
    parsed.spec.nfc = false;            // GGUF files carry no normalizer
    Tokenizer tokenizer;
    ASSERT_TRUE(tokenizer.Init(parsed.spec, 4096).ok()) << style;
    std::vector<test::TokenizerCase> cases;
    std::string error;
    ASSERT_TRUE(test::ReadTokenizerGolden(dir + ".txt", &cases, &error)) << error;
    std::vector<int32_t> ids(8192);
    for (const test::TokenizerCase& c : cases) {
      if (c.text.find("\xCC") != std::string::npos || c.text.find("\xE1\x84") != std::string::npos)
        continue;  // decomposed text: only the tokenizer.json (NFC) composes it
      size_t n = 0;
      ASSERT_TRUE(tokenizer.Encode(c.text, true, ids.data(), ids.size(), &n).ok());
      EXPECT_EQ(std::vector<int32_t>(ids.begin(), ids.begin() + static_cast<ptrdiff_t>(n)), c.ids)
          << name << ": " << c.text;
    }
  }
  TokenizerJson parsed;
  ASSERT_TRUE(ReadTokenizerJson(Style("gpt2").dump(), "", &parsed).ok());
  parsed.spec.has_pre_kind = false;
  Tokenizer tokenizer;
  for (const char* bad : {"default", "", "falcon"}) {
    parsed.spec.pre = bad;
    const Status s = tokenizer.Init(parsed.spec, 64);
    EXPECT_EQ(s.code(), StatusCode::kUnsupported) << bad;
    EXPECT_NE(std::string(s.message()).find("tokenizer.ggml.pre '" + std::string(bad) + "'"),
              std::string::npos)
        << s.message();
  }
}

}  // namespace
}  // namespace staticlm
