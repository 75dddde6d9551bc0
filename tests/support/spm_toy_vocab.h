// A small SentencePiece ("llama") vocabulary for tests, in the shape of Gemma's: <unk>, two
// control tokens, the 256 byte-fallback tokens, then a few normal and special tokens
// (SpmToyVocab::kFirstPiece onwards, listed in spm_toy_vocab.cpp). Test-only: allocates.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/tokenizer/tokenizer.h"
#include "tests/support/gguf_writer.h"

namespace staticlm::test {

struct SpmToyVocab {
  static constexpr int32_t kUnk = 0;
  static constexpr int32_t kBos = 1;        // "<s>", control
  static constexpr int32_t kEos = 2;        // "</s>", control
  static constexpr int32_t kFirstByte = 3;  // <0x00> .. <0xFF> are ids 3 .. 258
  static constexpr int32_t kFirstPiece = 259;

  SpmToyVocab();

  // A spec for `architecture` ("gemma3": Gemma rules; anything else: score order) viewing
  // this object's strings; valid while it lives.
  TokenizerSpec Spec(const std::string& architecture) const;
  // The same vocabulary as GGUF tokenizer metadata.
  void AddToGguf(GgufWriter* writer, const std::string& architecture) const;

  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
};

}  // namespace staticlm::test
