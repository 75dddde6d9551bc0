// Tests of the SentencePiece ("llama") tokenizer: the merge loop on a toy vocabulary, the
// GGUF reader's errors for malformed SentencePiece metadata, and the real Gemma 3 tokenizer
// (skipped when models/gemma-3-270m-q4_k_m.gguf is absent). The exhaustive id comparison
// with transformers is tests/spm_tokenizer_golden_test.cpp.
//
// Expected toy ids come from transformers: convert_gguf_tokenizer(architecture, {...}) in
// transformers/integrations/gguf/gguf_tokenizer_mapping.py (5.23) with this vocabulary,
// then backend.encode(text, add_special_tokens=False), in a scratch Python session — except
// the four space-prefix cases marked in ScoreOrderAndSpacePrefixForOtherArchitectures, which
// follow llama.cpp's rule (and the real files' normalizer) where that converter differs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/gguf/gguf_file.h"
#include "runtime/tokenizer/detokenizer.h"
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/tokenizer/tokenizer_from_gguf.h"
#include "tests/support/gguf_metadata_only.h"
#include "tests/support/gguf_writer.h"
#include "tests/support/spm_toy_vocab.h"
#include "tests/support/temp_path.h"

namespace staticlm {
namespace {

using Ids = std::vector<int32_t>;
using test::SpmToyVocab;

Ids EncodeAll(Tokenizer& tok, std::string_view s, bool parse_special = true) {
  std::vector<int32_t> ids(s.size() + 2);
  size_t n = 0;
  const Status st = tok.Encode(s, parse_special, ids.data(), ids.size(), &n);
  EXPECT_TRUE(st.ok()) << st.message();
  ids.resize(n);
  return ids;
}

std::string Decode(const Tokenizer& tok, const Ids& ids) {
  std::string out;
  for (int32_t id : ids) out += tok.TokenBytesView(id);
  return out;
}

// A toy tokenizer without BOS, so the expected ids are the text's alone.
class ToySpmTest : public ::testing::Test {
 protected:
  Status Init(const std::string& architecture, bool add_space_prefix = true) {
    TokenizerSpec spec = vocab_.Spec(architecture);
    spec.add_space_prefix = add_space_prefix;
    return tok_.Init(spec, 256);
  }
  SpmToyVocab vocab_;
  Tokenizer tok_;
};

constexpr int32_t kByte(uint8_t b) {
  return SpmToyVocab::kFirstByte + b;
}

TEST_F(ToySpmTest, GemmaMergesByPositionWithoutSpacePrefix) {
  ASSERT_TRUE(Init("gemma3").ok());
  EXPECT_EQ(EncodeAll(tok_, "abc"), (Ids{265}));       // b+c first, then a+bc
  EXPECT_EQ(EncodeAll(tok_, "bca"), (Ids{263, 260}));  // bc (263) ranks before ca (275)
  EXPECT_EQ(EncodeAll(tok_, "ab"), (Ids{264}));        // no prefix, whatever the flag says
  EXPECT_EQ(EncodeAll(tok_, "abcabc"), (Ids{265, 265}));
  EXPECT_EQ(EncodeAll(tok_, "aaa"), (Ids{260, 260, 260}));
  EXPECT_EQ(EncodeAll(tok_, "a b"), (Ids{260, 259, 261}));
  EXPECT_EQ(EncodeAll(tok_, " ab"), (Ids{259, 264}));
  EXPECT_EQ(EncodeAll(tok_,
                      "\xE2\x96\x81"
                      "a"),
            (Ids{266}));  // a literal "▁" merges too
}

TEST_F(ToySpmTest, ScoreOrderAndSpacePrefixForOtherArchitectures) {
  ASSERT_TRUE(Init("llama").ok());
  EXPECT_EQ(EncodeAll(tok_, "abc"), (Ids{259, 265}));
  EXPECT_EQ(EncodeAll(tok_, "bca"), (Ids{259, 261, 275}));  // ca scores best
  EXPECT_EQ(EncodeAll(tok_, "abcabc"), (Ids{259, 264, 275, 263}));
  EXPECT_EQ(EncodeAll(tok_, "aaa"), (Ids{266, 260, 260}));
  EXPECT_EQ(EncodeAll(tok_, "a b"), (Ids{266, 259, 261}));
  // A prefix even when the text starts with a space or "▁", and after a special token: the
  // rule of llama.cpp (llama-vocab.cpp: a space before every raw-text fragment that opens the
  // text or follows a special token) and of the real files' Prepend normalizer, which the
  // model-family goldens check against transformers (family_golden_test). transformers' own
  // GGUF converter (Metaspace, prepend_scheme "first") gives no prefix in these four cases.
  EXPECT_EQ(EncodeAll(tok_, " ab"), (Ids{259, 259, 264}));
  EXPECT_EQ(EncodeAll(tok_,
                      "\xE2\x96\x81"
                      "a"),
            (Ids{259, 266}));
  EXPECT_EQ(EncodeAll(tok_, "<s>ab"), (Ids{1, 259, 264}));
  EXPECT_EQ(EncodeAll(tok_, "x<x>x"), (Ids{259, 270, 268, 259, 270}));
}

TEST_F(ToySpmTest, SpacePrefixFlagOff) {
  // transformers' GGUF path ignores the flag for non-Gemma files (LlamaTokenizer always
  // prepends); these follow llama.cpp, which honours it.
  ASSERT_TRUE(Init("llama", false).ok());
  EXPECT_EQ(EncodeAll(tok_, "ab"), (Ids{264}));
  EXPECT_EQ(EncodeAll(tok_, "bca"), (Ids{261, 275}));
}

TEST_F(ToySpmTest, ByteFallbackForCharactersWithoutAToken) {
  ASSERT_TRUE(Init("gemma3").ok());
  EXPECT_EQ(EncodeAll(tok_, "\xC3\xA9"), (Ids{kByte(0xC3), kByte(0xA9)}));  // é
  EXPECT_EQ(EncodeAll(tok_, "a\xF0\x9F\x98\x80"),
            (Ids{260, kByte(0xF0), kByte(0x9F), kByte(0x98), kByte(0x80)}));
  EXPECT_EQ(EncodeAll(tok_, "\n"), (Ids{kByte('\n')}));
  // Byte tokens decode to their byte, so the text comes back.
  EXPECT_EQ(Decode(tok_, EncodeAll(tok_, "a\xF0\x9F\x98\x80 \xC3\xA9\n")),
            "a\xF0\x9F\x98\x80 \xC3\xA9\n");
}

TEST_F(ToySpmTest, GemmaSpaceRunsAreMergedNotMatched) {
  ASSERT_TRUE(Init("gemma3").ok());
  EXPECT_EQ(EncodeAll(tok_, "a  b"), (Ids{260, 267, 261}));
  EXPECT_EQ(EncodeAll(tok_, "  ab"), (Ids{267, 264}));
  EXPECT_EQ(EncodeAll(tok_, "   "), (Ids{267, 259}));  // merged from the left
  EXPECT_EQ(tok_.TokenBytesView(267), "  ");
  EXPECT_EQ(tok_.TokenBytesView(259), " ");
  EXPECT_EQ(tok_.TokenBytesView(266), " a");
}

TEST_F(ToySpmTest, SpecialTokens) {
  ASSERT_TRUE(Init("gemma3").ok());
  EXPECT_EQ(EncodeAll(tok_, "<x>"), (Ids{268}));
  EXPECT_EQ(EncodeAll(tok_, "x<x>x"), (Ids{270, 268, 270}));
  EXPECT_EQ(EncodeAll(tok_, "[u]a"), (Ids{274, 260}));
  EXPECT_EQ(EncodeAll(tok_, "<s>ab"), (Ids{1, 264}));
  // Without parse_special, control text is plain text and merging never forms a control
  // token (staticlm's rule: transformers' BPE, asked not to split specials, would merge
  // "<x" + ">" into 268); user-defined tokens are still matched.
  const Ids plain = EncodeAll(tok_, "<x>", false);
  EXPECT_EQ(plain, (Ids{272, 271}));
  EXPECT_EQ(EncodeAll(tok_, "[u]", false), (Ids{274}));
  EXPECT_EQ(tok_.TokenBytesView(268), "<x>");
}

TEST_F(ToySpmTest, BosAndEmptyText) {
  TokenizerSpec spec = vocab_.Spec("gemma3");
  spec.add_bos = true;
  ASSERT_TRUE(tok_.Init(spec, 16).ok());
  EXPECT_EQ(EncodeAll(tok_, ""), (Ids{SpmToyVocab::kBos}));
  EXPECT_EQ(EncodeAll(tok_, "ab"), (Ids{SpmToyVocab::kBos, 264}));
  EXPECT_EQ(tok_.unk_id(), SpmToyVocab::kUnk);
}

TEST_F(ToySpmTest, WorstCaseTextAtTheLimit) {
  // Every byte a symbol of its own (byte fallback), and every byte a space; both at the
  // limit, with a space prefix in the score-ordered flavour.
  for (const char* arch : {"gemma3", "llama"}) {
    ASSERT_TRUE(Init(arch).ok());
    std::string rare;
    while (rare.size() + 4 <= 256) rare += "\xF0\x9F\x98\x80";
    const std::string spaces(256, ' ');
    for (const std::string& s : {rare, spaces}) {
      std::vector<int32_t> ids(s.size() + 2);
      size_t n = 0;
      ASSERT_TRUE(tok_.Encode(s, true, ids.data(), ids.size(), &n).ok()) << arch;
      ids.resize(n);
      // The spaces are all the toy's user-defined token "  ": no text stretch gets a prefix.
      const bool prefixed = std::string_view(arch) == "llama" && s == rare;
      EXPECT_EQ(Decode(tok_, ids), prefixed ? " " + s : s) << arch;
    }
  }
}

TEST_F(ToySpmTest, InitRejectsMalformedVocabularies) {
  TokenizerSpec spec = vocab_.Spec("gemma3");
  spec.scores.pop_back();
  Status s = tok_.Init(spec, 16);
  EXPECT_EQ(s.code(), StatusCode::kFormatError);
  EXPECT_NE(std::string(s.message()).find("tokenizer.ggml.scores"), std::string::npos);

  spec = vocab_.Spec("llama");
  spec.scores[270] = std::nanf("");
  s = tok_.Init(spec, 16);
  EXPECT_EQ(s.code(), StatusCode::kFormatError);
  EXPECT_NE(std::string(s.message()).find("tokenizer.ggml.scores[270]"), std::string::npos);

  spec = vocab_.Spec("gemma3");
  spec.merges = {"a b"};
  EXPECT_EQ(tok_.Init(spec, 16).code(), StatusCode::kUnsupported);

  spec = vocab_.Spec("gemma3");
  spec.unk_id = 100000;
  EXPECT_EQ(tok_.Init(spec, 16).code(), StatusCode::kFormatError);
  EXPECT_TRUE(tok_.Init(vocab_.Spec("gemma3"), 16).ok());
}

// ---------------------------------------------------------------------------------------
// GGUF metadata errors: one line each, naming the key.

class SpmGgufTest : public ::testing::Test {
 protected:
  // Writes the toy vocabulary with `edit` applied to the writer's inputs and initialises a
  // tokenizer from it.
  Status InitFrom(const test::GgufWriter& writer) {
    const std::string path = test::TempPath("spm_tokenizer.gguf");
    EXPECT_TRUE(writer.WriteFile(path.c_str()).ok());
    gguf::GgufFile file;
    const Status open = file.Open(path.c_str());
    EXPECT_TRUE(open.ok()) << open.message();
    const Status s = InitTokenizerFromGguf(file, 64, &tok_);
    std::remove(path.c_str());
    EXPECT_EQ(std::string(s.message()).find('\n'), std::string::npos) << s.message();
    return s;
  }
  static void ExpectError(const Status& s, StatusCode code, const char* needle) {
    EXPECT_EQ(s.code(), code) << s.message();
    EXPECT_NE(std::string(s.message()).find(needle), std::string::npos) << s.message();
  }
  void AddTokenizerKeys(test::GgufWriter* w, bool with_scores) {
    w->AddString("general.architecture", "gemma3");
    w->AddString("tokenizer.ggml.model", "llama");
    w->AddStringArray("tokenizer.ggml.tokens", vocab_.tokens);
    if (with_scores) w->AddArray("tokenizer.ggml.scores", gguf::ValueType::kF32, vocab_.scores);
    w->AddArray("tokenizer.ggml.token_type", gguf::ValueType::kI32, vocab_.types);
  }
  SpmToyVocab vocab_;
  Tokenizer tok_;
};

TEST_F(SpmGgufTest, ReadsAValidVocabulary) {
  test::GgufWriter w;
  vocab_.AddToGguf(&w, "gemma3");
  w.AddBool("tokenizer.ggml.add_space_prefix", false);
  ASSERT_TRUE(InitFrom(w).ok());
  EXPECT_TRUE(tok_.add_bos());
  EXPECT_EQ(tok_.bos_id(), SpmToyVocab::kBos);
  EXPECT_EQ(tok_.unk_id(), SpmToyVocab::kUnk);
  EXPECT_EQ(EncodeAll(tok_, "abc"), (Ids{SpmToyVocab::kBos, 265}));
}

TEST_F(SpmGgufTest, AddSpacePrefixKeyIsHonouredOutsideGemma) {
  for (bool prefix : {true, false}) {
    test::GgufWriter w;
    vocab_.AddToGguf(&w, "llama");
    w.AddBool("tokenizer.ggml.add_space_prefix", prefix);
    ASSERT_TRUE(InitFrom(w).ok());
    EXPECT_EQ(EncodeAll(tok_, "ab"),
              prefix ? (Ids{SpmToyVocab::kBos, 259, 264}) : (Ids{SpmToyVocab::kBos, 264}));
  }
  test::GgufWriter absent;  // no key: a prefix, as in llama.cpp and transformers
  vocab_.AddToGguf(&absent, "llama");
  ASSERT_TRUE(InitFrom(absent).ok());
  EXPECT_EQ(EncodeAll(tok_, "ab"), (Ids{SpmToyVocab::kBos, 259, 264}));
}

TEST_F(SpmGgufTest, UnsupportedModel) {
  test::GgufWriter w;
  w.AddString("tokenizer.ggml.model", "bert");
  w.AddStringArray("tokenizer.ggml.tokens", vocab_.tokens);
  ExpectError(InitFrom(w), StatusCode::kUnsupported, "'bert'");
}

TEST_F(SpmGgufTest, MissingScores) {
  test::GgufWriter w;
  AddTokenizerKeys(&w, false);
  ExpectError(InitFrom(w), StatusCode::kFormatError, "tokenizer.ggml.scores");
}

TEST_F(SpmGgufTest, ScoresMiscounted) {
  test::GgufWriter w;
  AddTokenizerKeys(&w, false);
  std::vector<float> short_scores(vocab_.scores.begin(), vocab_.scores.end() - 1);
  w.AddArray("tokenizer.ggml.scores", gguf::ValueType::kF32, short_scores);
  ExpectError(InitFrom(w), StatusCode::kFormatError, "tokenizer.ggml.scores has 275 values");
}

TEST_F(SpmGgufTest, ScoresOfTheWrongType) {
  test::GgufWriter w;
  AddTokenizerKeys(&w, false);
  w.AddStringArray("tokenizer.ggml.scores", vocab_.tokens);
  ExpectError(InitFrom(w), StatusCode::kFormatError, "tokenizer.ggml.scores");
}

TEST_F(SpmGgufTest, MissingByteToken) {
  vocab_.tokens[SpmToyVocab::kFirstByte + 0x41] = "<byte A>";
  test::GgufWriter w;
  AddTokenizerKeys(&w, true);
  ExpectError(InitFrom(w), StatusCode::kFormatError, "tokenizer.ggml.tokens lacks the byte");
  test::GgufWriter again;
  AddTokenizerKeys(&again, true);
  EXPECT_NE(std::string(InitFrom(again).message()).find("<0x41>"), std::string::npos);
}

TEST_F(SpmGgufTest, UnknownIdOutOfRange) {
  test::GgufWriter w;
  AddTokenizerKeys(&w, true);
  w.AddU32("tokenizer.ggml.unknown_token_id", 5000);
  ExpectError(InitFrom(w), StatusCode::kFormatError, "unk 5000");
}

// ---------------------------------------------------------------------------------------
// The real Gemma 3 tokenizer

class GemmaTokenizerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    static gguf::GgufFile file;
    static std::vector<uint8_t> bytes;
    const Status s = test::OpenMetadataOnly(STATICLM_GEMMA_MODEL, &bytes, &file);
    if (s.code() == StatusCode::kIoError) {
      load_error_ = s.message();
      return;
    }
    ASSERT_TRUE(s.ok()) << s.message();
    tokenizer_ = new Tokenizer();
    const Status t = InitTokenizerFromGguf(file, kMaxTextBytes, tokenizer_);
    ASSERT_TRUE(t.ok()) << t.message();
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    tokenizer_ = nullptr;
  }
  void SetUp() override {
    if (tokenizer_ == nullptr) GTEST_SKIP() << "Gemma model not available: " << load_error_;
  }

  static constexpr size_t kMaxTextBytes = 4096;
  static inline Tokenizer* tokenizer_ = nullptr;
  static inline std::string load_error_;
};

TEST_F(GemmaTokenizerTest, ReadsTheFilesMetadata) {
  EXPECT_EQ(tokenizer_->vocab_size(), 262144);
  EXPECT_EQ(tokenizer_->bos_id(), 2);
  EXPECT_EQ(tokenizer_->eos_id(), 1);
  EXPECT_EQ(tokenizer_->unk_id(), 3);
  EXPECT_TRUE(tokenizer_->add_bos());
  EXPECT_EQ(tokenizer_->TokenText(105), "<start_of_turn>");
  EXPECT_TRUE(tokenizer_->IsControl(105));
  EXPECT_TRUE(tokenizer_->IsEndOfGeneration(106));  // <end_of_turn>
  EXPECT_TRUE(tokenizer_->IsEndOfGeneration(1));    // <eos>
  EXPECT_FALSE(tokenizer_->IsEndOfGeneration(105));
}

TEST_F(GemmaTokenizerTest, DecodesTokenBytes) {
  // Ids from transformers (tokenizer.convert_ids_to_tokens / decode).
  EXPECT_EQ(tokenizer_->TokenBytesView(1902), " world");  // "▁world"
  EXPECT_EQ(tokenizer_->TokenBytesView(138), "  ");       // a space run
  EXPECT_EQ(tokenizer_->TokenBytesView(107), "\n");
  EXPECT_EQ(tokenizer_->TokenBytesView(238 + 0xF0), "\xF0");  // <0xF0>
  EXPECT_EQ(tokenizer_->TokenBytesView(105), "<start_of_turn>");
}

TEST_F(GemmaTokenizerTest, ControlTextIsPlainWithoutParseSpecial) {
  std::vector<int32_t> ids(64);
  size_t n = 0;
  ASSERT_TRUE(tokenizer_->Encode("<start_of_turn>user", false, ids.data(), ids.size(), &n).ok());
  ASSERT_GT(n, 2u);
  std::string text;
  for (size_t i = 1; i < n; ++i) {
    EXPECT_FALSE(tokenizer_->IsControl(ids[i])) << ids[i];
    text += tokenizer_->TokenBytesView(ids[i]);
  }
  EXPECT_EQ(text, "<start_of_turn>user");
}

TEST_F(GemmaTokenizerTest, StreamsByteFallbackCharactersWhole) {
  // U+20000 has no token: four byte tokens, which the detokenizer holds until complete.
  std::vector<int32_t> ids(16);
  size_t n = 0;
  ASSERT_TRUE(tokenizer_->Encode("\xF0\xA0\x80\x80", true, ids.data(), ids.size(), &n).ok());
  ASSERT_EQ(n, 5u);  // BOS + 4 bytes
  Detokenizer detok;
  std::vector<char> out(Detokenizer::MaxPushBytes(*tokenizer_));
  std::string streamed;
  for (size_t i = 1; i < n; ++i) {
    size_t written = 0;
    ASSERT_TRUE(detok.Push(*tokenizer_, ids[i], out.data(), out.size(), &written).ok());
    EXPECT_EQ(written, i + 1 < n ? 0u : 4u);
    streamed.append(out.data(), written);
  }
  EXPECT_EQ(streamed, "\xF0\xA0\x80\x80");
}

TEST_F(GemmaTokenizerTest, WorstCaseTextStaysWithinTheLimit) {
  std::string rare;
  while (rare.size() + 4 <= kMaxTextBytes) rare += "\xF0\xA0\x80\x80";
  const std::string spaces(kMaxTextBytes, ' ');
  const std::string letters(kMaxTextBytes, 'x');
  for (const std::string& s : {rare, spaces, letters}) {
    std::vector<int32_t> ids(s.size() + 1);
    size_t n = 0;
    ASSERT_TRUE(tokenizer_->Encode(s, true, ids.data(), ids.size(), &n).ok());
    std::string back;
    for (size_t i = 1; i < n; ++i) back += tokenizer_->TokenBytesView(ids[i]);
    EXPECT_EQ(back, s);
  }
}

}  // namespace
}  // namespace staticlm
