// libFuzzer target: the tokenizer.json reader (runtime/tokenizer/tokenizer_json.h) and the
// tokenizer it builds. Any bytes are taken as a tokenizer.json; malformed ones must fail
// with a status, never crash. One that loads must then encode a fixed set of texts (digits,
// spaces, marks, specials) with ids in range and decode every id it produced.
// Seeds: the committed tokenizer.json of every style in tests/golden/tokenizer_json/ and
// their first halves.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "runtime/tokenizer/tokenizer.h"
#include "runtime/tokenizer/tokenizer_json.h"

namespace {

using namespace staticlm;

constexpr size_t kMaxText = 256;

constexpr std::string_view kTexts[] = {
    "",
    "Hello world, it's 2024!  \n\n\tx",
    "Cafe\xCC\x81 \xEA\xB0\x81 \xCD\x84 \xF0\x9F\x98\x80",
    "<|endoftext|><s> [MASK]  <tool>x</s>",
    "   1234567890   ",
    "HelloWorld DON'T \xC7\x85x \xE4\xB8\xAD"
    "A e\xCC\x81X a/b\r\n/",  // gpt-4o's classes
};

void Fail(const char* what) {
  std::fprintf(stderr, "tokenizer_json_fuzz: %s\n", what);
  std::abort();
}

void Exercise(Tokenizer& tok) {
  static int32_t ids[4 * kMaxText + 8];
  for (std::string_view text : kTexts) {
    for (bool parse_special : {true, false}) {
      size_t n = 0;
      if (!tok.Encode(text, parse_special, ids, sizeof(ids) / sizeof(ids[0]), &n).ok()) continue;
      for (size_t i = 0; i < n; ++i) {
        if (ids[i] < 0 || ids[i] >= tok.vocab_size()) Fail("an id out of range");
        char bytes[1 << 12];
        size_t len = 0;
        (void)tok.TokenBytes(ids[i], bytes, sizeof(bytes), &len);
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  TokenizerJson parsed;
  if (!ReadTokenizerJson(json, "", &parsed).ok()) return 0;
  Tokenizer tok;
  if (!tok.Init(parsed.spec, kMaxText).ok()) return 0;
  Exercise(tok);
  return 0;
}
