// SentencePiece encoding and decoding make no heap allocation after Init: the toy vocabulary
// (always) and the real Gemma 3 tokenizer (when models/gemma-3-270m-q4_k_m.gguf is present)
// encode texts that exercise every path (merges, byte fallback, specials, space runs, the
// length limit, errors) and stream the ids back, with malloc/new interposed
// (platform/alloc_counter.cpp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "platform/alloc_counter.h"
#include "runtime/gguf/gguf_file.h"
#include "runtime/tokenizer/detokenizer.h"
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/tokenizer/tokenizer_from_gguf.h"
#include "tests/support/gguf_metadata_only.h"
#include "tests/support/spm_toy_vocab.h"

namespace staticlm {
namespace {

namespace counter = staticlm::alloc_counter;

constexpr size_t kMaxTextBytes = 2048;

// Texts built before counting starts.
std::vector<std::string> Texts() {
  std::vector<std::string> texts = {
      "",
      "abc bca  ab   x<x>x [u] <s>",
      "<start_of_turn>user\nHello, world!<end_of_turn>\n<start_of_turn>model\n",
      "caf\xC3\xA9 \xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\x98\x80\xE2\x80\x8D\xF0\x9F\x94\xA5",
      "\xF0\xA0\x80\x80\xEF\xBF\xBD\t\t\n\n    spaces",
  };
  std::string rare;
  while (rare.size() + 4 <= kMaxTextBytes) rare += "\xF0\xA0\x80\x80";
  texts.push_back(rare);
  // Resized in place rather than copied from a temporary: GCC 12 at -O3 warns falsely
  // (-Warray-bounds) about copying a long temporary std::string into the vector.
  texts.emplace_back();
  texts.back().resize(kMaxTextBytes, ' ');
  return texts;
}

void EncodeAndStream(Tokenizer& tok, const std::vector<std::string>& texts, bool* ok) {
  int32_t ids[kMaxTextBytes + 2];
  char out[4096];
  Detokenizer detok;
  for (const std::string& t : texts) {
    for (bool parse_special : {true, false}) {
      size_t n = 0;
      if (!tok.Encode(t, parse_special, ids, kMaxTextBytes + 2, &n).ok()) *ok = false;
      for (size_t i = 0; i < n; ++i) {
        size_t written = 0;
        if (!detok.Push(tok, ids[i], out, sizeof(out), &written).ok()) *ok = false;
      }
      detok.Flush(out, sizeof(out));
    }
  }
  // Errors allocate nothing either.
  size_t n = 0;
  if (tok.Encode("abc\xFF", true, ids, kMaxTextBytes + 2, &n).ok()) *ok = false;
  if (tok.Encode("abc abc", true, ids, 1, &n).ok()) *ok = false;
}

void ExpectNoHeapEvents(Tokenizer& tok) {
  const std::vector<std::string> texts = Texts();
  bool ok = true;
  counter::Start();
  EncodeAndStream(tok, texts, &ok);
  counter::Stop();
  EXPECT_TRUE(ok);
  char where[4096];
  counter::DescribeFirstEvent(where, sizeof(where));
  EXPECT_EQ(counter::Allocations(), 0u) << where;
  EXPECT_EQ(counter::Frees(), 0u) << where;
}

TEST(SpmTokenizerNoAllocTest, ToyVocabularyEncodesWithoutHeapEvents) {
  if (!counter::Available()) GTEST_SKIP() << "sanitizer build: allocations are not counted";
  const test::SpmToyVocab vocab;
  for (const char* arch : {"gemma3", "llama"}) {
    Tokenizer tok;
    ASSERT_TRUE(tok.Init(vocab.Spec(arch), kMaxTextBytes).ok());
    ExpectNoHeapEvents(tok);
  }
}

TEST(SpmTokenizerNoAllocTest, GemmaEncodesWithoutHeapEvents) {
  if (!counter::Available()) GTEST_SKIP() << "sanitizer build: allocations are not counted";
  // Metadata only: the tokenizer does not need the tensors (whose types may not load).
  gguf::GgufFile file;
  std::vector<uint8_t> bytes;
  const Status open = test::OpenMetadataOnly(STATICLM_GEMMA_MODEL, &bytes, &file);
  if (open.code() == StatusCode::kIoError) {
    GTEST_SKIP() << "Gemma model not available: " << open.message();
  }
  ASSERT_TRUE(open.ok()) << open.message();
  Tokenizer tok;
  const Status init = InitTokenizerFromGguf(file, kMaxTextBytes, &tok);
  ASSERT_TRUE(init.ok()) << init.message();
  ExpectNoHeapEvents(tok);
}

}  // namespace
}  // namespace staticlm
