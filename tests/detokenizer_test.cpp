// Tests of the streaming Detokenizer: characters split across tokens are held until whole,
// ill-formed bytes become U+FFFD (expected strings checked against Python's
// bytes.decode("utf-8", errors="replace")), and streaming the real model's tokens gives
// back the text exactly.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "runtime/gguf/gguf_file.h"
#include "runtime/tokenizer/byte_level.h"
#include "runtime/tokenizer/detokenizer.h"
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/tokenizer/tokenizer_from_gguf.h"
#include "runtime/tokenizer/utf8.h"

namespace staticlm {
namespace {

constexpr std::string_view kFffd = "\xEF\xBF\xBD";

// A vocabulary whose token b (0..255) is the single byte b, plus a control token 256.
class ByteTokenizer {
 public:
  ByteTokenizer() {
    for (int b = 0; b < 256; ++b) {
      char buf[4];
      storage_.emplace_back(buf,
                            text::EncodeUtf8(text::ByteToCodePoint(static_cast<uint8_t>(b)), buf));
    }
    storage_.emplace_back("<|end|>");
    TokenizerSpec spec;
    spec.model = "gpt2";
    spec.pre = "gpt2";
    for (const std::string& s : storage_) spec.tokens.push_back(s);
    spec.token_types.assign(257, static_cast<int32_t>(TokenType::kNormal));
    spec.token_types[256] = static_cast<int32_t>(TokenType::kControl);
    status_ = tokenizer_.Init(spec, 64);
  }
  const Tokenizer& get() const { return tokenizer_; }
  const Status& status() const { return status_; }

 private:
  std::vector<std::string> storage_;
  Tokenizer tokenizer_;
  Status status_;
};

// Streams `bytes` one byte-token at a time; checks every step's output is valid UTF-8 and
// returns the concatenation including Flush.
std::string StreamBytes(const Tokenizer& tok, std::string_view bytes) {
  Detokenizer d;
  std::string out;
  char buf[64];
  for (char c : bytes) {
    size_t n = 0;
    const Status s = d.Push(tok, static_cast<uint8_t>(c), buf, sizeof(buf), &n);
    EXPECT_TRUE(s.ok()) << s.message();
    EXPECT_TRUE(text::IsValidUtf8(std::string_view(buf, n), nullptr));
    out.append(buf, n);
  }
  out.append(buf, d.Flush(buf, sizeof(buf)));
  EXPECT_EQ(d.pending_bytes(), 0u);
  return out;
}

TEST(DetokenizerTest, HoldsASplitCharacterUntilItIsWhole) {
  ByteTokenizer bt;
  ASSERT_TRUE(bt.status().ok()) << bt.status().message();
  Detokenizer d;
  char buf[64];
  size_t n = 99;
  const std::string_view grin = "\xF0\x9F\x98\x80";  // U+1F600 in four tokens
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(d.Push(bt.get(), static_cast<uint8_t>(grin[i]), buf, sizeof(buf), &n).ok());
    EXPECT_EQ(n, 0u) << "emitted part of a character after byte " << i;
    EXPECT_EQ(d.pending_bytes(), i + 1);
  }
  ASSERT_TRUE(d.Push(bt.get(), static_cast<uint8_t>(grin[3]), buf, sizeof(buf), &n).ok());
  EXPECT_EQ(std::string_view(buf, n), grin);
  EXPECT_EQ(d.pending_bytes(), 0u);
  EXPECT_EQ(d.Flush(buf, sizeof(buf)), 0u);
}

TEST(DetokenizerTest, ReplacesIllFormedBytesDeterministically) {
  ByteTokenizer bt;
  ASSERT_TRUE(bt.status().ok());
  const std::string r(kFffd);
  struct Case {
    std::string_view in;
    std::string out;
  };
  const Case cases[] = {
      {"\xE2\x82"
       "A",
       r + "A"},                            // cut short, then ASCII
      {"\xC0\xAF", r + r},                  // overlong lead, stray continuation
      {"\xED\xA0\x80", r + r + r},          // surrogate
      {"\xF4\x90\x80\x80", r + r + r + r},  // above U+10FFFF
      {"\xE0\x80", r + r},                  // overlong three-byte
      {"\x80\x80", r + r},                  // stray continuations
      {"\xF0\x9F\x98", r},                  // dangling at the end: Flush
      {"a\xFF\xFE"
       "b",
       "a" + r + r + "b"},
      {"\xE4\xBD\xA0\xF0", "\xE4\xBD\xA0" + r},
      {"\xF0\x9F\x98\x80", "\xF0\x9F\x98\x80"},
  };
  for (const Case& c : cases) EXPECT_EQ(StreamBytes(bt.get(), c.in), c.out);
}

TEST(DetokenizerTest, EmitsControlTokenTextAndChecksArguments) {
  ByteTokenizer bt;
  ASSERT_TRUE(bt.status().ok());
  Detokenizer d;
  char buf[64];
  size_t n = 0;
  ASSERT_TRUE(d.Push(bt.get(), 256, buf, sizeof(buf), &n).ok());
  EXPECT_EQ(std::string_view(buf, n), "<|end|>");
  EXPECT_EQ(d.Push(bt.get(), 257, buf, sizeof(buf), &n).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(d.Push(bt.get(), -1, buf, sizeof(buf), &n).code(), StatusCode::kInvalidArgument);

  // Too small a buffer fails without consuming the token or the held bytes.
  ASSERT_TRUE(d.Push(bt.get(), 0xC3, buf, sizeof(buf), &n).ok());
  EXPECT_EQ(d.Push(bt.get(), 0xA9, buf, 3, &n).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(d.pending_bytes(), 1u);
  EXPECT_EQ(d.Flush(buf, 2), 0u);  // no room for U+FFFD: keeps the byte
  EXPECT_EQ(d.pending_bytes(), 1u);
  ASSERT_TRUE(d.Push(bt.get(), 0xA9, buf, sizeof(buf), &n).ok());
  EXPECT_EQ(std::string_view(buf, n), "\xC3\xA9");
  EXPECT_GE(Detokenizer::MaxPushBytes(bt.get()), 3 * (1 + Detokenizer::kMaxPendingBytes));
}

TEST(DetokenizerTest, ResetDropsHeldBytes) {
  ByteTokenizer bt;
  ASSERT_TRUE(bt.status().ok());
  Detokenizer d;
  char buf[64];
  size_t n = 0;
  ASSERT_TRUE(d.Push(bt.get(), 0xE4, buf, sizeof(buf), &n).ok());
  d.Reset();
  EXPECT_EQ(d.pending_bytes(), 0u);
  ASSERT_TRUE(d.Push(bt.get(), 'x', buf, sizeof(buf), &n).ok());
  EXPECT_EQ(std::string_view(buf, n), "x");
}

// The real model: tokens of multi-byte text often end mid-character.
class ModelDetokenizerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    gguf::GgufFile file;
    if (!file.Open(STATICLM_DEFAULT_MODEL).ok()) return;
    tokenizer_ = new Tokenizer();
    const Status s = InitTokenizerFromGguf(file, 4096, tokenizer_);
    ASSERT_TRUE(s.ok()) << s.message();
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    tokenizer_ = nullptr;
  }
  void SetUp() override {
    if (tokenizer_ == nullptr) GTEST_SKIP() << "model not available: " << STATICLM_DEFAULT_MODEL;
  }
  static inline Tokenizer* tokenizer_ = nullptr;
};

TEST_F(ModelDetokenizerTest, StreamingEqualsTheFullDecode) {
  const char* texts[] = {
      " \xF0\x9F\x98\x80 grin",  // " 😀" is two tokens that split the emoji
      "\xE4\xBD\xA0\xE5\xA5\xBD\xEF\xBC\x8C\xE4\xB8\x96\xE7\x95\x8C",  // 你好，世界
      "caf\xC3\xA9 \xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD \xF0\x9F\x87\xBA\xF0\x9F\x87\xB8 "
      "\xE2\x9D\xA4\xEF\xB8\x8F",
      "\xE0\xA4\xB9\xE0\xA4\xBF\xE0\xA4\x82\xE0\xA4\xA6\xE0\xA5\x80 "
      "\xD8\xA7\xD9\x84\xD8\xB9\xD8\xB1\xD8\xA8\xD9\x8A\xD8\xA9",
      "<|im_start|>assistant\nSure! 2024 \xE2\x82\xAC<|im_end|>",
  };
  const size_t cap = Detokenizer::MaxPushBytes(*tokenizer_);
  std::vector<char> buf(cap);
  for (const char* t : texts) {
    std::vector<int32_t> ids(4096);
    size_t n_ids = 0;
    ASSERT_TRUE(tokenizer_->Encode(t, true, ids.data(), ids.size(), &n_ids).ok());
    Detokenizer d;
    std::string streamed;
    bool held_something = false;
    for (size_t i = 0; i < n_ids; ++i) {
      size_t n = 0;
      ASSERT_TRUE(d.Push(*tokenizer_, ids[i], buf.data(), buf.size(), &n).ok());
      const std::string_view piece(buf.data(), n);
      EXPECT_TRUE(text::IsValidUtf8(piece, nullptr)) << "broken UTF-8 after token " << i;
      held_something = held_something || d.pending_bytes() > 0;
      streamed.append(piece);
      EXPECT_EQ(std::string_view(t).substr(0, streamed.size()), streamed);
    }
    streamed.append(buf.data(), d.Flush(buf.data(), buf.size()));
    EXPECT_EQ(streamed, t);
    if (std::string_view(t).substr(0, 5) == " \xF0\x9F\x98\x80") {
      EXPECT_TRUE(held_something) << "the emoji should have been split across tokens";
    }
  }
}

}  // namespace
}  // namespace staticlm
