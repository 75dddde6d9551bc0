// libFuzzer target: encoding and decoding arbitrary bytes with every tokenizer kind.
//   kind 0  byte-level BPE, SmolLM2-135M-Instruct's vocabulary and "smollm" pre-tokenizer
//   kind 1  SentencePiece with Gemma's rules, Gemma 3 270M's vocabulary
//   kind 2  SentencePiece with llama's rules (score order, space prefix), a toy vocabulary
//   kind 3  byte-level BPE with the "gpt2" pre-tokenizer, the tiny model's vocabulary
// The real vocabularies are read once from the models scripts/fetch-model downloads.
//
// Input: byte 0 picks the kind (bits 0-1), decoding (bit 2) and parse_special (bit 3); the
// rest is the text to encode, or little-endian int32 token ids to decode (any value, so ids
// out of range too). Checked beyond "no crash": valid UTF-8 encodes (invalid UTF-8 is
// refused), at most one id per byte (plus BOS and a space prefix), ids are in range, the
// tokens' bytes give the text back (less bytes the vocabulary has no token for), and the
// detokenizer's output is always valid UTF-8. Valid text is also split by every pre-tokenizer
// pattern (pre_tokenizer.h: GPT-2, Llama 3, Qwen2, gpt-4o ...): the pieces are never empty and
// join to the text.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/gguf/gguf_file.h"
#include "runtime/tokenizer/detokenizer.h"
#include "runtime/tokenizer/pre_tokenizer.h"
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/tokenizer/tokenizer_from_gguf.h"
#include "runtime/tokenizer/utf8.h"
#include "tests/support/gguf_writer.h"
#include "tests/support/spm_toy_vocab.h"

namespace {

using namespace staticlm;

constexpr size_t kMaxText = 1 << 14;
constexpr int kKinds = 4;
constexpr uint8_t kDecode = 4;
constexpr uint8_t kParseSpecial = 8;

struct Fixture {
  Tokenizer tokenizers[kKinds];
  bool gemma_rules[kKinds] = {false, true, false, false};
  bool space_prefix[kKinds] = {false, false, true, false};
  // Bytes the vocabulary has no token for, which Encode drops (SmolLM2 lacks a few controls).
  bool dropped[kKinds][256] = {};
  std::vector<int32_t> ids;
  std::vector<char> text;
};

Fixture* g_fixture = nullptr;

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "tokenizer_fuzz: %s\n", what);
  std::abort();
}

void InitFromModel(const char* path, Tokenizer* tokenizer) {
  gguf::GgufFile file;
  Status s = file.Open(path);
  if (s.ok()) s = InitTokenizerFromGguf(file, kMaxText, tokenizer);
  if (!s.ok()) {
    std::fprintf(stderr, "tokenizer_fuzz: %s: %s (run scripts/fetch-model first)\n", path,
                 s.message());
    std::abort();
  }
}

void InitFromSpec(const TokenizerSpec& spec, Tokenizer* tokenizer) {
  if (!tokenizer->Init(spec, kMaxText).ok()) Fail("cannot build a small vocabulary");
}

// A byte without a single-byte token of its own is dropped by Encode, as by the reference.
void FindDroppedBytes(Fixture* f) {
  for (int k = 0; k < kKinds; ++k) {
    const Tokenizer& t = f->tokenizers[k];
    for (int b = 0; b < 256; ++b) f->dropped[k][b] = true;
    for (int32_t id = 0; id < t.vocab_size(); ++id) {
      const std::string_view bytes = t.TokenBytesView(id);
      if (bytes.size() == 1 && !t.IsControl(id))
        f->dropped[k][static_cast<uint8_t>(bytes[0])] = false;
    }
  }
}

// The toy vocabulary's user-defined token at text[i] ("  " or "[u]"), or "": the tokenizer
// splits these off before it encodes the plain text between them, leftmost first.
std::string_view UserDefinedAt(std::string_view text, size_t i) {
  for (std::string_view token : {std::string_view("  "), std::string_view("[u]")}) {
    if (text.substr(i, token.size()) == token) return token;
  }
  return {};
}

// What decoding the encoding of `text` must give: spaces spelled "▁" by SentencePiece come
// back as spaces, llama's rule adds one in front of every stretch of plain text, and bytes
// without a token are gone.
std::string ExpectedRoundTrip(const Fixture& f, int kind, std::string_view text) {
  std::string out;
  const bool spm = f.gemma_rules[kind] || f.space_prefix[kind];
  // llama's rule (llama.cpp's, and the Prepend normalizer of the real files' tokenizer.json):
  // a "▁" opens every stretch of plain text, even one that starts with a space: the text's
  // first and each one after a user-defined token (spelled in the output as it is).
  bool stretch_start = true;
  for (size_t i = 0; i < text.size(); ++i) {
    if (f.space_prefix[kind]) {
      const std::string_view user = UserDefinedAt(text, i);
      if (!user.empty()) {
        out.append(user);
        i += user.size() - 1;
        stretch_start = true;
        continue;
      }
      if (stretch_start) out.push_back(' ');
      stretch_start = false;
    }
    const auto b = static_cast<uint8_t>(text[i]);
    if (spm && text.substr(i, 3) == "\xE2\x96\x81") {
      out.push_back(' ');
      i += 2;
    } else if (!f.dropped[kind][b]) {
      out.push_back(static_cast<char>(b));
    }
  }
  return out;
}

// The bytes of ids[0 .. n) (skipping a leading BOS), joined; and checks that a Detokenizer
// turns them into valid UTF-8 (replacing what a dropped byte left ill-formed).
std::string Decode(const Tokenizer& tokenizer, const int32_t* ids, size_t n, bool skip_bos) {
  Detokenizer detokenizer;
  std::string bytes, text;
  std::vector<char>& buffer = g_fixture->text;
  for (size_t i = skip_bos ? 1 : 0; i < n; ++i) {
    bytes.append(tokenizer.TokenBytesView(ids[i]));
    size_t written = 0;
    if (!detokenizer.Push(tokenizer, ids[i], buffer.data(), buffer.size(), &written).ok()) {
      Fail("Push refused an id in range with a buffer of MaxPushBytes");
    }
    text.append(buffer.data(), written);
  }
  text.append(buffer.data(), detokenizer.Flush(buffer.data(), buffer.size()));
  if (!text::IsValidUtf8(text, nullptr)) Fail("the detokenizer wrote invalid UTF-8");
  return bytes;
}

void CheckEverySplit(std::string_view text) {
  using text::PreTokenizerKind;
  for (PreTokenizerKind k : {PreTokenizerKind::kGpt2, PreTokenizerKind::kDigitsThenGpt2,
                             PreTokenizerKind::kDigitRunsThenGpt2, PreTokenizerKind::kLlama3,
                             PreTokenizerKind::kQwen2, PreTokenizerKind::kGpt4o}) {
    text::PieceSplitter splitter(text, k);
    std::string_view piece;
    size_t covered = 0;
    while (splitter.Next(&piece)) {
      if (piece.empty() || piece.data() != text.data() + covered) {
        Fail("a pre-tokenizer piece is empty or not where the previous one ended");
      }
      covered += piece.size();
    }
    if (covered != text.size()) Fail("the pre-tokenizer pieces do not cover the text");
  }
}

void FuzzEncode(int kind, bool parse_special, std::string_view text) {
  Tokenizer& tokenizer = g_fixture->tokenizers[kind];
  std::vector<int32_t>& ids = g_fixture->ids;
  size_t n = 0;
  Status s = tokenizer.Encode(text, parse_special, ids.data(), ids.size(), &n);
  const bool valid = text::IsValidUtf8(text, nullptr);
  if (s.ok() != valid) Fail(valid ? "valid UTF-8 was refused" : "invalid UTF-8 was accepted");
  if (!s.ok()) return;
  CheckEverySplit(text);
  // Callers size their id buffers by this bound (tokenizer.h): one id per byte, plus BOS,
  // plus a SentencePiece space prefix.
  if (n > text.size() + 2) Fail("Encode wrote more ids than its documented bound");
  for (size_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] >= tokenizer.vocab_size()) Fail("Encode wrote an id out of range");
  }
  const bool bos = tokenizer.add_bos();
  if (bos && (n == 0 || ids[0] != tokenizer.bos_id())) Fail("BOS is missing");
  // llama's space prefix depends on the stretch a special token starts; only plain text here.
  if (g_fixture->space_prefix[kind] && parse_special) return;
  const std::string decoded = Decode(tokenizer, ids.data(), n, bos);
  const std::string expected = ExpectedRoundTrip(*g_fixture, kind, text);
  if (decoded != expected) {
    std::fprintf(stderr, "kind %d: decoded \"%s\", expected \"%s\"\n", kind, decoded.c_str(),
                 expected.c_str());
    Fail("decoding the encoded text does not give the text back");
  }
}

void FuzzDecode(int kind, const uint8_t* data, size_t size) {
  Tokenizer& tokenizer = g_fixture->tokenizers[kind];
  const int64_t vocab = tokenizer.vocab_size();
  Detokenizer detokenizer;
  std::vector<char>& buffer = g_fixture->text;
  std::string out;
  for (size_t i = 0; i + 4 <= size; i += 4) {
    uint32_t raw;
    std::memcpy(&raw, data + i, 4);
    // Mostly ids in range, some just outside it on either side.
    const int32_t id = static_cast<int32_t>(static_cast<int64_t>(raw % (vocab + 16)) - 8);
    const bool in_range = id >= 0 && id < vocab;
    (void)tokenizer.TokenText(id);
    (void)tokenizer.IsControl(id);
    (void)tokenizer.IsEndOfGeneration(id);
    if (tokenizer.TokenBytesView(id).size() > tokenizer.max_token_bytes()) {
      Fail("a token's bytes exceed max_token_bytes");
    }
    const size_t held = detokenizer.pending_bytes();
    size_t written = 0;
    Status s = detokenizer.Push(tokenizer, id, buffer.data(), buffer.size(), &written);
    if (s.ok() != in_range) Fail(in_range ? "Push refused an id in range" : "Push took a bad id");
    if (!s.ok() && (written != 0 || detokenizer.pending_bytes() != held)) {
      Fail("a refused Push changed the stream");
    }
    out.append(buffer.data(), written);
  }
  out.append(buffer.data(), detokenizer.Flush(buffer.data(), buffer.size()));
  if (!text::IsValidUtf8(out, nullptr)) Fail("the detokenizer wrote invalid UTF-8");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  static Fixture fixture;
  g_fixture = &fixture;
  InitFromModel(STATICLM_DEFAULT_MODEL, &fixture.tokenizers[0]);
  InitFromModel(STATICLM_GEMMA_MODEL, &fixture.tokenizers[1]);
  static test::SpmToyVocab toy;
  InitFromSpec(toy.Spec("llama"), &fixture.tokenizers[2]);
  static std::vector<std::string> tiny_tokens = test::TinyLlamaTokens();
  static std::vector<std::string> tiny_merges = test::TinyLlamaMerges();
  TokenizerSpec tiny;
  tiny.model = "gpt2";
  tiny.pre = "gpt2";
  for (const std::string& t : tiny_tokens) tiny.tokens.push_back(t);
  for (const std::string& m : tiny_merges) tiny.merges.push_back(m);
  for (size_t i = 0; i < tiny_tokens.size(); ++i) {  // SmolLM2's 17 specials lead, as control
    tiny.token_types.push_back(
        static_cast<int32_t>(i < 17 ? TokenType::kControl : TokenType::kNormal));
  }
  InitFromSpec(tiny, &fixture.tokenizers[3]);
  size_t max_push = 0;
  for (const Tokenizer& t : fixture.tokenizers) {
    max_push = std::max(max_push, Detokenizer::MaxPushBytes(t));
  }
  fixture.ids.resize(3 * kMaxText + 8);
  fixture.text.resize(max_push);
  FindDroppedBytes(&fixture);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size - 1 > kMaxText) return 0;
  const int kind = data[0] & 3;
  if (data[0] & kDecode) {
    FuzzDecode(kind, data + 1, size - 1);
  } else {
    FuzzEncode(kind, (data[0] & kParseSpecial) != 0,
               std::string_view(reinterpret_cast<const char*>(data + 1), size - 1));
  }
  return 0;
}
