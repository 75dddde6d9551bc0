// Tests of the tokenizer: Unicode classes, UTF-8, the byte-level alphabet, the pre-tokenizer,
// BPE on a hand-made vocabulary, and the real SmolLM2 tokenizer read from the model file.
//
// Expected pre-tokenizer pieces and token ids below come from an independent reference:
// Hugging Face `tokenizers` (pre_tokenize_str / encode) with a Digits(individual_digits) +
// ByteLevel(use_regex) pre-tokenizer and this GGUF's vocabulary and merges, rendered in a
// scratch Python session. Exhaustive id checks live in tokenizer_golden_test.cpp.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/gguf/gguf_file.h"
#include "runtime/tokenizer/byte_level.h"
#include "runtime/tokenizer/pre_tokenizer.h"
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/tokenizer/tokenizer_from_gguf.h"
#include "runtime/tokenizer/utf8.h"

namespace staticlm {
namespace {

using text::PreTokenizerKind;

// ---------------------------------------------------------------------------------------
// Unicode classes and UTF-8

TEST(UnicodeClassTest, MatchesTheRegexDefinitions) {
  EXPECT_EQ(text::ClassifyCodePoint('a'), text::kLetter);
  EXPECT_EQ(text::ClassifyCodePoint('Z'), text::kLetter);
  EXPECT_EQ(text::ClassifyCodePoint('7'), text::kNumber);
  EXPECT_EQ(text::ClassifyCodePoint(' '), text::kSpace);
  EXPECT_EQ(text::ClassifyCodePoint('\t'), text::kSpace);
  EXPECT_EQ(text::ClassifyCodePoint('\r'), text::kSpace);
  EXPECT_EQ(text::ClassifyCodePoint('\v'), text::kSpace);
  EXPECT_EQ(text::ClassifyCodePoint('.'), text::kOther);
  EXPECT_EQ(text::ClassifyCodePoint('\''), text::kOther);
  EXPECT_EQ(text::ClassifyCodePoint(0x1C), text::kOther);  // not \s in Oniguruma/Rust
  EXPECT_EQ(text::ClassifyCodePoint(0x85), text::kSpace);  // NEL
  EXPECT_EQ(text::ClassifyCodePoint(0xA0), text::kSpace);  // no-break space (Zs)
  EXPECT_EQ(text::ClassifyCodePoint(0x2028), text::kSpace);
  EXPECT_EQ(text::ClassifyCodePoint(0x3000), text::kSpace);
  EXPECT_EQ(text::ClassifyCodePoint(0x200B), text::kOther);    // zero width space is Cf
  EXPECT_EQ(text::ClassifyCodePoint(0xE9), text::kLetter);     // é
  EXPECT_EQ(text::ClassifyCodePoint(0x4F60), text::kLetter);   // 你 (Lo)
  EXPECT_EQ(text::ClassifyCodePoint(0x02B0), text::kLetter);   // modifier letter (Lm)
  EXPECT_EQ(text::ClassifyCodePoint(0x0301), text::kOther);    // combining acute (Mn)
  EXPECT_EQ(text::ClassifyCodePoint(0x0663), text::kNumber);   // Arabic-Indic three (Nd)
  EXPECT_EQ(text::ClassifyCodePoint(0xBD), text::kNumber);     // ½ (No)
  EXPECT_EQ(text::ClassifyCodePoint(0x2167), text::kNumber);   // Roman numeral eight (Nl)
  EXPECT_EQ(text::ClassifyCodePoint(0xFF10), text::kNumber);   // fullwidth zero
  EXPECT_EQ(text::ClassifyCodePoint(0x1F600), text::kOther);   // emoji (So)
  EXPECT_EQ(text::ClassifyCodePoint(0x20000), text::kLetter);  // CJK extension B
  EXPECT_EQ(text::ClassifyCodePoint(0x10FFFF), text::kOther);
  EXPECT_EQ(text::ClassifyCodePoint(0x0301), text::kOther);  // combining acute (Mn): not \p{L}
}

// The gpt-4o pattern's kinds: letter case and marks.
TEST(UnicodeClassTest, KindsTellCaseAndMarks) {
  EXPECT_EQ(text::CodePointKindOf('A'), text::kKindUpper);
  EXPECT_EQ(text::CodePointKindOf('z'), text::kKindLower);
  EXPECT_EQ(text::CodePointKindOf(0x01C5), text::kKindUpper);   // Dž (Lt)
  EXPECT_EQ(text::CodePointKindOf(0x0436), text::kKindLower);   // Cyrillic zhe (Ll)
  EXPECT_EQ(text::CodePointKindOf(0x02B0), text::kKindLetter);  // modifier h (Lm)
  EXPECT_EQ(text::CodePointKindOf(0x4E2D), text::kKindLetter);  // CJK (Lo)
  EXPECT_EQ(text::CodePointKindOf(0x0301), text::kKindMark);    // combining acute (Mn)
  EXPECT_EQ(text::CodePointKindOf(0x0903), text::kKindMark);    // Devanagari visarga (Mc)
  EXPECT_EQ(text::CodePointKindOf('7'), text::kKindNumber);
  EXPECT_EQ(text::CodePointKindOf('\t'), text::kKindSpace);
  EXPECT_EQ(text::CodePointKindOf('/'), text::kKindOther);
}

TEST(UnicodeClassTest, AsciiTableAgreesWithTheRanges) {
  for (uint32_t cp = 0; cp < 128; ++cp) {
    int from_ranges = text::kKindOther;
    for (size_t i = 0; i < text::kCodePointRangeCount; ++i) {
      if (text::kCodePointRanges[i].first <= cp && cp <= text::kCodePointRanges[i].last) {
        from_ranges = text::kCodePointRanges[i].kind;
      }
    }
    EXPECT_EQ(text::kAsciiKind[cp], from_ranges) << "code point " << cp;
  }
  for (size_t i = 1; i < text::kCodePointRangeCount; ++i) {
    EXPECT_LT(text::kCodePointRanges[i - 1].last, text::kCodePointRanges[i].first);
  }
}

TEST(Utf8Test, AcceptsWellFormedText) {
  EXPECT_TRUE(text::IsValidUtf8("", nullptr));
  EXPECT_TRUE(text::IsValidUtf8("plain ascii", nullptr));
  EXPECT_TRUE(text::IsValidUtf8("caf\xC3\xA9 \xE4\xBD\xA0 \xF0\x9F\x98\x80", nullptr));
  EXPECT_TRUE(text::IsValidUtf8("\xED\x9F\xBF\xEE\x80\x80\xF4\x8F\xBF\xBF", nullptr));
}

TEST(Utf8Test, RejectsIllFormedTextAndSaysWhere) {
  struct Case {
    std::string_view bytes;
    size_t offset;
  };
  const Case cases[] = {
      {"ab\x80", 2},            // stray continuation
      {"a\xC3", 1},             // truncated
      {"\xC0\xAF", 0},          // overlong
      {"xx\xE0\x9F\xBF", 2},    // overlong three-byte
      {"\xED\xA0\x80", 0},      // surrogate
      {"\xF4\x90\x80\x80", 0},  // above U+10FFFF
      {"\xF5\x80\x80\x80", 0},  // invalid lead
      {"\xE4\xBD"
       "a",
       0},                     // continuation missing
      {"ok \xF0\x9F\x98", 3},  // truncated at end
  };
  for (const Case& c : cases) {
    size_t offset = 99;
    EXPECT_FALSE(text::IsValidUtf8(c.bytes, &offset));
    EXPECT_EQ(offset, c.offset);
  }
}

TEST(Utf8Test, EncodesAndDecodes) {
  const uint32_t cps[] = {0x24, 0xA2, 0x939, 0x20AC, 0xD55C, 0x10348, 0x10FFFF};
  for (uint32_t cp : cps) {
    char buf[4];
    const size_t n = text::EncodeUtf8(cp, buf);
    uint32_t back = 0;
    EXPECT_EQ(text::DecodeValidUtf8(buf, &back), static_cast<int>(n));
    EXPECT_EQ(back, cp);
    EXPECT_TRUE(text::IsValidUtf8(std::string_view(buf, n), nullptr));
  }
}

// ---------------------------------------------------------------------------------------
// Byte-level alphabet

TEST(ByteLevelTest, SpellsBytesLikeGpt2) {
  EXPECT_EQ(text::ByteToCodePoint(' '), 0x120u);   // Ġ
  EXPECT_EQ(text::ByteToCodePoint('\n'), 0x10Au);  // Ċ
  EXPECT_EQ(text::ByteToCodePoint('\t'), 0x109u);  // ĉ
  EXPECT_EQ(text::ByteToCodePoint(0), 0x100u);
  EXPECT_EQ(text::ByteToCodePoint('a'), static_cast<uint32_t>('a'));
  EXPECT_EQ(text::ByteToCodePoint(0x7F), 0x121u);
  EXPECT_EQ(text::ByteToCodePoint(0xA0), 0x142u);
  EXPECT_EQ(text::ByteToCodePoint(0xAD), 0x143u);
  EXPECT_EQ(text::ByteToCodePoint(0xE9), 0xE9u);
  EXPECT_EQ(text::CodePointToByte(0x144), -1);
  EXPECT_EQ(text::CodePointToByte(0x20), -1);  // a raw space is not in the alphabet
  bool seen[0x144] = {};
  for (int b = 0; b < 256; ++b) {
    const uint32_t cp = text::ByteToCodePoint(static_cast<uint8_t>(b));
    ASSERT_LT(cp, 0x144u);
    EXPECT_FALSE(seen[cp]) << "two bytes share code point " << cp;
    seen[cp] = true;
    EXPECT_EQ(text::CodePointToByte(cp), b);
  }
}

TEST(ByteLevelTest, DecodesVocabularySpelling) {
  char out[16];
  size_t n = 0;
  ASSERT_TRUE(text::DecodeByteLevel("\xC4\xA0world", out, sizeof(out), &n));  // "Ġworld"
  EXPECT_EQ(std::string(out, n), " world");
  ASSERT_TRUE(text::DecodeByteLevel("\xC3\x83\xC2\xA9", out, sizeof(out), &n));  // "Ã©"
  EXPECT_EQ(std::string(out, n), "\xC3\xA9");
  EXPECT_FALSE(text::DecodeByteLevel("a b", out, sizeof(out), &n));  // raw space
  EXPECT_FALSE(text::DecodeByteLevel("abc", out, 2, &n));            // does not fit
}

// ---------------------------------------------------------------------------------------
// Pre-tokenizer (expected pieces from Hugging Face's pre_tokenize_str)

std::vector<std::string> Split(std::string_view s, PreTokenizerKind kind) {
  std::vector<std::string> pieces;
  text::PieceSplitter splitter(s, kind);
  std::string_view piece;
  while (splitter.Next(&piece)) pieces.emplace_back(piece);
  return pieces;
}

using Pieces = std::vector<std::string>;

std::string FromHex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

// The gpt-4o (o200k) split, piece for piece, against the `tokenizers` package's pre-tokenizer
// on the tokenizer.json golden texts and gpt-4o's own (letter case, marks, contractions after
// words, slashes): tests/golden/tokenizer_json/gpt4o_pieces.txt, from
// tests/reference/make_tokenizer_json_golden.py. Ids alone would not show a split no merge
// crosses.
TEST(PreTokenizerTest, Gpt4oPiecesAreTheReferences) {
  std::ifstream in(STATICLM_GOLDEN_DIR "/tokenizer_json/gpt4o_pieces.txt");
  ASSERT_TRUE(in.good());
  std::string line, text;
  int checked = 0;
  while (std::getline(in, line)) {
    if (line.rfind("text", 0) == 0) {
      text = FromHex(line.size() > 5 ? line.substr(5) : "");
    } else if (line.rfind("pieces", 0) == 0) {
      Pieces want;
      std::istringstream hexes(line.substr(6));
      std::string hex;
      while (hexes >> hex) want.push_back(FromHex(hex));
      EXPECT_EQ(Split(text, PreTokenizerKind::kGpt4o), want) << "text: '" << text << "'";
      ++checked;
    }
  }
  EXPECT_GE(checked, 40);
}

TEST(PreTokenizerTest, DigitsThenGpt2) {
  const auto k = PreTokenizerKind::kDigitsThenGpt2;
  EXPECT_EQ(Split("Hello world", k), (Pieces{"Hello", " world"}));
  EXPECT_EQ(Split("2024", k), (Pieces{"2", "0", "2", "4"}));
  EXPECT_EQ(Split("a 1", k), (Pieces{"a", " ", "1"}));
  EXPECT_EQ(Split("a  1", k), (Pieces{"a", "  ", "1"}));
  EXPECT_EQ(Split(" 42", k), (Pieces{" ", "4", "2"}));
  EXPECT_EQ(Split("x=12+3", k), (Pieces{"x", "=", "1", "2", "+", "3"}));
  EXPECT_EQ(Split("abc123def", k), (Pieces{"abc", "1", "2", "3", "def"}));
  EXPECT_EQ(Split("\xD9\xA3\xD9\xA4", k), (Pieces{"\xD9\xA3", "\xD9\xA4"}));  // ٣٤
  EXPECT_EQ(Split("\xC2\xBDx", k), (Pieces{"\xC2\xBD", "x"}));                // ½x
  EXPECT_EQ(Split("I'm can't they'll we've you'd it's 'S", k),
            (Pieces{"I", "'m", " can", "'t", " they", "'ll", " we", "'ve", " you", "'d", " it",
                    "'s", " '", "S"}));
  EXPECT_EQ(Split("a   b", k), (Pieces{"a", "  ", " b"}));
  EXPECT_EQ(Split("a \n\n b", k), (Pieces{"a", " \n\n", " b"}));
  EXPECT_EQ(Split("  \n  x", k), (Pieces{"  \n ", " x"}));
  EXPECT_EQ(Split("tab\t\tx", k), (Pieces{"tab", "\t", "\t", "x"}));
  EXPECT_EQ(Split("end  ", k), (Pieces{"end", "  "}));
  EXPECT_EQ(Split(" 's", k), (Pieces{" '", "s"}));
  EXPECT_EQ(Split("x.'s", k), (Pieces{"x", ".'", "s"}));
  EXPECT_EQ(Split("Caf\xC3\xA9 \xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\x98\x80!", k),
            (Pieces{"Caf\xC3\xA9", " \xE4\xBD\xA0\xE5\xA5\xBD", " \xF0\x9F\x98\x80!"}));
  EXPECT_EQ(Split("a\xC2\xA0"
                  "b",
                  k),
            (Pieces{"a", "\xC2\xA0", "b"}));
  EXPECT_EQ(Split("\r\n\r\nx", k), (Pieces{"\r\n\r", "\n", "x"}));
  EXPECT_EQ(Split("", k), Pieces{});
}

TEST(PreTokenizerTest, Gpt2KeepsNumbersTogether) {
  const auto k = PreTokenizerKind::kGpt2;
  EXPECT_EQ(Split("2024", k), (Pieces{"2024"}));
  EXPECT_EQ(Split("a 1", k), (Pieces{"a", " 1"}));
  EXPECT_EQ(Split("a  1", k), (Pieces{"a", " ", " 1"}));
  EXPECT_EQ(Split("x=12+3", k), (Pieces{"x", "=", "12", "+", "3"}));
  EXPECT_EQ(Split(" 42", k), (Pieces{" 42"}));
  EXPECT_EQ(Split("\xD9\xA3\xD9\xA4", k), (Pieces{"\xD9\xA3\xD9\xA4"}));
}

TEST(PreTokenizerTest, PiecesCoverTheTextExactly) {
  const std::string s =
      "Mixed:\t 12 words,\n\n  \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E 'll  \xF0\x9F\x91\x8D ";
  for (auto kind : {PreTokenizerKind::kGpt2, PreTokenizerKind::kDigitsThenGpt2}) {
    std::string joined;
    for (const std::string& p : Split(s, kind)) {
      EXPECT_FALSE(p.empty());
      joined += p;
    }
    EXPECT_EQ(joined, s);
  }
}

// ---------------------------------------------------------------------------------------
// BPE on a hand-made vocabulary

// A vocabulary with all 256 byte tokens (ids 0..255 in byte order) plus the given extra
// tokens, byte-level spelled.
struct ToyVocab {
  std::vector<std::string> storage;
  TokenizerSpec spec;

  explicit ToyVocab(const std::vector<std::string>& extra_texts,
                    const std::vector<TokenType>& extra_types = {}) {
    for (int b = 0; b < 256; ++b) {
      char buf[4];
      storage.emplace_back(buf,
                           text::EncodeUtf8(text::ByteToCodePoint(static_cast<uint8_t>(b)), buf));
    }
    for (const std::string& t : extra_texts) storage.push_back(t);
    spec.model = "gpt2";
    spec.pre = "smollm";
    for (const std::string& s : storage) spec.tokens.push_back(s);
    for (size_t i = 0; i < storage.size(); ++i) {
      const size_t e = i < 256 ? 0 : i - 256;
      const TokenType t = i >= 256 && e < extra_types.size() ? extra_types[e] : TokenType::kNormal;
      spec.token_types.push_back(static_cast<int32_t>(t));
    }
  }
};

// A vocabulary whose every token is "" holds no text at all: Init must handle the empty
// buffers (a gguf_fuzz run found it taking element 0 of an empty vector, which the sanitizer
// build reports) and either refuse the vocabulary in a message or build it.
TEST(TokenizerInitTest, VocabularyOfEmptyTokensIsHandled) {
  for (const char* model : {"gpt2", "llama"}) {
    TokenizerSpec spec;
    spec.model = model;
    spec.tokens = {"", "", ""};
    spec.scores = {0.0f, 0.0f, 0.0f};
    Tokenizer tokenizer;
    const Status s = tokenizer.Init(spec, 64);
    if (!s.ok()) {
      EXPECT_NE(std::string(s.message()), "") << model;
    }
  }
}

std::vector<int32_t> EncodeAll(Tokenizer& tok, std::string_view s, bool parse_special) {
  std::vector<int32_t> ids(s.size() + 2);
  size_t n = 0;
  const Status st = tok.Encode(s, parse_special, ids.data(), ids.size(), &n);
  EXPECT_TRUE(st.ok()) << st.message();
  ids.resize(n);
  return ids;
}

using Ids = std::vector<int32_t>;

TEST(BpeTest, MergesLowestRankFirst) {
  // 256 "ab", 257 "bc", 258 "abc" (from "ab c"), 259 "bcd" (from "bc d").
  ToyVocab v({"ab", "bc", "abc", "bcd"});
  v.spec.merges = {"b c", "a b", "ab c", "bc d"};
  Tokenizer tok;
  ASSERT_TRUE(tok.Init(v.spec, 64).ok());
  // "bc" (rank 0) beats "ab" (rank 1), then "bc d" merges; "a" never joins.
  EXPECT_EQ(EncodeAll(tok, "abcd", false), (Ids{'a', 259}));
  // Without d, "a" + "bc" has no rule.
  EXPECT_EQ(EncodeAll(tok, "abc", false), (Ids{'a', 257}));
  EXPECT_EQ(EncodeAll(tok, "ab", false), (Ids{256}));
  EXPECT_EQ(EncodeAll(tok, "x", false), (Ids{'x'}));
}

// Expected results checked against Hugging Face tokenizers' BPE with the same toy rules.
TEST(BpeTest, EqualRanksMergeLeftmostFirst) {
  ToyVocab v({"aa", "aaa"});
  v.spec.merges = {"a a", "aa a"};
  Tokenizer tok;
  ASSERT_TRUE(tok.Init(v.spec, 64).ok());
  EXPECT_EQ(EncodeAll(tok, "aaa", false), (Ids{257}));         // (aa)a -> aaa
  EXPECT_EQ(EncodeAll(tok, "aaaa", false), (Ids{256, 256}));   // aa aa; no "aa aa" rule
  EXPECT_EQ(EncodeAll(tok, "aaaaa", false), (Ids{256, 257}));  // aa aa a -> aa aaa
  EXPECT_EQ(EncodeAll(tok, "aaaaaaa", false), (Ids{256, 256, 257}));
}

TEST(BpeTest, SpecialTokensLongestMatchAndParseFlag) {
  ToyVocab v({"<|a|>", "<|a|>x", "<u>"},
             {TokenType::kControl, TokenType::kControl, TokenType::kUserDefined});
  Tokenizer tok;
  ASSERT_TRUE(tok.Init(v.spec, 64).ok());
  EXPECT_EQ(EncodeAll(tok, "q<|a|>xy", true), (Ids{'q', 257, 'y'}));  // longest wins
  EXPECT_EQ(EncodeAll(tok, "<|a|>", true), (Ids{256}));
  // Without parse_special control text is plain text, but user-defined tokens still count.
  const Ids plain = EncodeAll(tok, "<|a|>", false);
  EXPECT_EQ(plain.size(), 5u);
  EXPECT_EQ(EncodeAll(tok, "<u>", false), (Ids{258}));
  EXPECT_TRUE(tok.IsControl(256));
  EXPECT_FALSE(tok.IsControl(258));
  EXPECT_EQ(tok.TokenBytesView(256), "<|a|>");  // control text is not byte-level decoded
}

TEST(BpeTest, AddBosFollowsTheFlag) {
  ToyVocab v({"<s>"}, {TokenType::kControl});
  v.spec.bos_id = 256;
  v.spec.add_bos = true;
  Tokenizer tok;
  ASSERT_TRUE(tok.Init(v.spec, 64).ok());
  EXPECT_TRUE(tok.add_bos());
  EXPECT_EQ(EncodeAll(tok, "hi", false), (Ids{256, 'h', 'i'}));
  EXPECT_EQ(EncodeAll(tok, "", false), (Ids{256}));
}

TEST(BpeTest, BytesWithoutATokenAreDropped) {
  // The reference (Hugging Face BPE without an unknown token) skips such bytes, and their
  // neighbours become adjacent.
  ToyVocab v({"ab", "!!"});
  v.spec.merges = {"a b", "! !"};
  v.spec.tokens[0x04] = "<none>";  // no token spells byte 0x04 any more
  v.spec.token_types[0x04] = static_cast<int32_t>(TokenType::kUnused);
  Tokenizer tok;
  ASSERT_TRUE(tok.Init(v.spec, 64).ok());
  EXPECT_EQ(EncodeAll(tok,
                      "a\x04"
                      "b",
                      false),
            (Ids{'a', 'b'}));                              // "\x04" is its own piece
  EXPECT_EQ(EncodeAll(tok, "!\x04!", false), (Ids{257}));  // one piece: "!!" merges
  EXPECT_EQ(EncodeAll(tok, "\x04", false), Ids{});
}

TEST(BpeTest, InitRejectsWhatItCannotRun) {
  ToyVocab v({"ab"});
  Tokenizer tok;
  v.spec.model = "t5";
  const Status unsupported = tok.Init(v.spec, 64);
  EXPECT_EQ(unsupported.code(), StatusCode::kUnsupported);
  EXPECT_NE(std::string(unsupported.message()).find("'t5'"), std::string::npos);
  v.spec.model = "gpt2";
  v.spec.pre = "default";
  EXPECT_EQ(tok.Init(v.spec, 64).code(), StatusCode::kUnsupported);
  v.spec.pre = "smollm";
  v.spec.merges = {"a zz"};
  const Status bad_merge = tok.Init(v.spec, 64);
  EXPECT_EQ(bad_merge.code(), StatusCode::kFormatError);
  EXPECT_NE(std::string(bad_merge.message()).find("merge 0"), std::string::npos);
  v.spec.merges = {};
  v.spec.eos_id = 9999;
  EXPECT_EQ(tok.Init(v.spec, 64).code(), StatusCode::kFormatError);
  v.spec.eos_id = -1;
  EXPECT_EQ(tok.Init(v.spec, 0).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(tok.Init(v.spec, 64).ok());
}

TEST(BpeTest, EncodeBeforeInitIsAnError) {
  Tokenizer tok;
  int32_t ids[4];
  size_t n = 0;
  EXPECT_EQ(tok.Encode("x", false, ids, 4, &n).code(), StatusCode::kInvalidState);
}

// ---------------------------------------------------------------------------------------
// The real SmolLM2 tokenizer

class ModelTokenizerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    static gguf::GgufFile file;
    const Status s = file.Open(STATICLM_DEFAULT_MODEL);
    if (!s.ok()) {
      load_error_ = s.message();
      return;
    }
    tokenizer_ = new Tokenizer();
    const Status t = InitTokenizerFromGguf(file, kMaxTextBytes, tokenizer_);
    ASSERT_TRUE(t.ok()) << t.message();
    ASSERT_TRUE(ReadTokenizerSpec(file, &spec_).ok());
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    tokenizer_ = nullptr;
  }
  void SetUp() override {
    if (tokenizer_ == nullptr) GTEST_SKIP() << "model not available: " << load_error_;
  }

  Ids Encode(std::string_view s, bool parse_special = true) {
    return EncodeAll(*tokenizer_, s, parse_special);
  }
  std::string Decode(const Ids& ids) {
    std::string out;
    for (int32_t id : ids) out += tokenizer_->TokenBytesView(id);
    return out;
  }

  static constexpr size_t kMaxTextBytes = 4096;
  static inline Tokenizer* tokenizer_ = nullptr;
  static inline TokenizerSpec spec_;  // views into the static file above
  static inline std::string load_error_;
};

TEST_F(ModelTokenizerTest, ReadsTheFilesMetadata) {
  EXPECT_EQ(tokenizer_->vocab_size(), 49152);
  EXPECT_EQ(tokenizer_->eos_id(), 2);
  EXPECT_EQ(tokenizer_->bos_id(), 1);
  EXPECT_FALSE(tokenizer_->add_bos());  // SmolLM2 does not prepend BOS
  EXPECT_EQ(spec_.pre, "smollm");
  EXPECT_EQ(spec_.merges.size(), 48900u);
  EXPECT_EQ(tokenizer_->TokenText(1), "<|im_start|>");
  EXPECT_EQ(tokenizer_->TokenText(905), "\xC4\xA0world");  // "Ġworld"
  EXPECT_EQ(tokenizer_->TokenBytesView(905), " world");
  EXPECT_EQ(tokenizer_->TokenText(-1), "");
  EXPECT_EQ(tokenizer_->TokenText(49152), "");
}

TEST_F(ModelTokenizerTest, RoundTripsVariedText) {
  const char* texts[] = {
      "Hello, world!",
      "The year 2024 had 366 days; pi is 3.14159.",
      "   leading spaces and trailing   ",
      "tabs\tand\nnewlines\r\n\n\n  indented\n\t\tcode();",
      "I'm sure they'll say it's fine, don't you think? We've seen it.",
      "Caf\xC3\xA9 na\xC3\xAFve r\xC3\xA9sum\xC3\xA9 fa\xC3\xA7"
      "ade \xC3\x85ngstr\xC3\xB6m",
      "\xE4\xBD\xA0\xE5\xA5\xBD\xEF\xBC\x8C\xE4\xB8\x96\xE7\x95\x8C\xEF\xBC\x81",  // 你好，世界！
      "\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4 \xD0\xA0\xD0\xBE\xD1\x81\xD1\x81\xD0\xB8\xD1\x8F",
      "Emoji: \xF0\x9F\x98\x80\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD \xF0\x9F\x87\xBA\xF0\x9F\x87\xB8",
      "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
      "<|endoftext|><|im_end|><|im_start|>",
      "<|im_start <|im_end| <|im_",
      "def f(x):\n    return x ** 2  # square",
      "\xC2\xBD \xE2\x85\xAB \xD9\xA3\xD9\xA4 \xEF\xBC\x90",
      "a\xC2\xA0"
      "b\xE3\x80\x80"
      "c\xE2\x80\x8B"
      "d",
      "",
  };
  for (const char* t : texts) {
    const Ids ids = Encode(t);
    EXPECT_EQ(Decode(ids), t) << "text: " << t;
    for (int32_t id : ids) {
      EXPECT_GE(id, 0);
      EXPECT_LT(id, tokenizer_->vocab_size());
    }
  }
}

TEST_F(ModelTokenizerTest, MatchesReferenceIds) {
  // Ids from Hugging Face tokenizers with this file's vocabulary (see the file comment).
  EXPECT_EQ(Encode("Hello world"), (Ids{19556, 905}));
  EXPECT_EQ(Encode(" \xF0\x9F\x98\x80"), (Ids{40303, 218}));
  EXPECT_EQ(Encode("<|im_start|>user\nHi<|im_end|>\n"), (Ids{1, 4093, 198, 26843, 2, 198}));
  EXPECT_EQ(Encode("I'm 2024"), (Ids{57, 5248, 216, 34, 32, 34, 36}));
  EXPECT_EQ(Encode("\xC3\xA9"), (Ids{2756}));
  // Spaces before a number stay together, because the number is split off first.
  EXPECT_EQ(Encode("Total:   42 items"), (Ids{17647, 42, 333, 36, 34, 3723}));
  EXPECT_EQ(Encode("x  7"), (Ids{104, 256, 39}));
  EXPECT_EQ(Encode("<|im_start|>", false), (Ids{44, 108, 306, 79, 3738, 108, 46}));
}

TEST_F(ModelTokenizerTest, SplitsDigitsIndividually) {
  const Ids ids = Encode("2024");
  ASSERT_EQ(ids.size(), 4u);
  EXPECT_EQ(tokenizer_->TokenText(ids[0]), "2");
  EXPECT_EQ(tokenizer_->TokenText(ids[1]), "0");
  EXPECT_EQ(tokenizer_->TokenText(ids[2]), "2");
  EXPECT_EQ(tokenizer_->TokenText(ids[3]), "4");
  EXPECT_EQ(Encode("1234567890").size(), 10u);
}

TEST_F(ModelTokenizerTest, RecognisesSpecialTokensOnlyWhenAsked) {
  EXPECT_EQ(Encode("<|im_start|>"), (Ids{1}));
  EXPECT_EQ(Encode("<|im_end|>"), (Ids{2}));
  EXPECT_EQ(Encode("<|endoftext|>"), (Ids{0}));
  const Ids plain = Encode("<|im_start|>", false);
  EXPECT_GT(plain.size(), 1u);
  for (int32_t id : plain) EXPECT_FALSE(tokenizer_->IsControl(id));
  EXPECT_EQ(Decode(plain), "<|im_start|>");
}

TEST_F(ModelTokenizerTest, KnowsEndOfGenerationTokens) {
  EXPECT_TRUE(tokenizer_->IsEndOfGeneration(2));   // <|im_end|>, the EOS
  EXPECT_TRUE(tokenizer_->IsEndOfGeneration(0));   // <|endoftext|>
  EXPECT_FALSE(tokenizer_->IsEndOfGeneration(1));  // <|im_start|>
  EXPECT_FALSE(tokenizer_->IsEndOfGeneration(905));
  EXPECT_FALSE(tokenizer_->IsEndOfGeneration(-3));
  EXPECT_FALSE(tokenizer_->IsEndOfGeneration(1 << 20));
}

TEST_F(ModelTokenizerTest, RejectsInvalidUtf8WithAClearError) {
  int32_t ids[16];
  size_t n = 7;
  const Status s = tokenizer_->Encode("ab\xC3(", true, ids, 16, &n);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(s.message()).find("UTF-8"), std::string::npos);
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(tokenizer_->Encode("\xED\xA0\x80", true, ids, 16, &n).code(),
            StatusCode::kInvalidArgument);
}

TEST_F(ModelTokenizerTest, RejectsTextLongerThanTheLimit) {
  const std::string at_limit(kMaxTextBytes, 'a');
  std::vector<int32_t> ids(kMaxTextBytes + 1);
  size_t n = 0;
  EXPECT_TRUE(tokenizer_->Encode(at_limit, true, ids.data(), ids.size(), &n).ok());
  EXPECT_GT(n, 0u);
  const std::string over(kMaxTextBytes + 1, 'a');
  const Status s = tokenizer_->Encode(over, true, ids.data(), ids.size(), &n);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(s.message()).find("max_text_bytes"), std::string::npos);
}

TEST_F(ModelTokenizerTest, ReportsAnOutputBufferTooSmall) {
  int32_t ids[2];
  size_t n = 0;
  EXPECT_EQ(tokenizer_->Encode("one two three", true, ids, 2, &n).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(tokenizer_->Encode("<|im_end|><|im_end|><|im_end|>", true, ids, 2, &n).code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(tokenizer_->Encode("one two", true, ids, 2, &n).ok());
  EXPECT_EQ(n, 2u);
}

TEST_F(ModelTokenizerTest, CopiesTokenBytes) {
  char buf[8];
  size_t n = 0;
  ASSERT_TRUE(tokenizer_->TokenBytes(905, buf, sizeof(buf), &n).ok());
  EXPECT_EQ(std::string(buf, n), " world");
  EXPECT_EQ(tokenizer_->TokenBytes(905, buf, 3, &n).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(tokenizer_->TokenBytes(-1, buf, sizeof(buf), &n).code(), StatusCode::kInvalidArgument);
  char wide[16];
  ASSERT_TRUE(tokenizer_->TokenBytes(2, wide, sizeof(wide), &n).ok());
  EXPECT_EQ(std::string(wide, n), "<|im_end|>");  // control tokens give their text
}

TEST_F(ModelTokenizerTest, WorstCaseTextStaysWithinTheLimit) {
  // One long piece (no spaces) and one long run of spaces exercise the BPE scratch bounds.
  std::string letters(kMaxTextBytes, 'x');
  std::string spaces(kMaxTextBytes, ' ');
  for (const std::string& s : {letters, spaces}) {
    const Ids ids = Encode(s);
    EXPECT_EQ(Decode(ids), s);
  }
}

}  // namespace
}  // namespace staticlm
