// SpmVocab: what the SentencePiece merge loop needs to know about each token, built at init
// from a tokenizer.ggml.model = "llama" vocabulary.
//
// Tokens are looked up by their *spelling*: the vocabulary text, in which a space is written
// U+2581 "▁". Two adjacent symbols merge when the concatenation of their spellings is a
// token; among all such pairs the one whose merged token has the best merge rank goes first
// (see SpmEncoder). The rank comes from the token's score, or, for Gemma files, from its
// position in the vocabulary (see SpmMergeOrder).
//
// Everything is allocated by Init; the lookups after it are run-phase safe (no allocation).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "platform/status.h"
#include "runtime/tokenizer/token_index.h"

namespace staticlm::text {

// U+2581, the SentencePiece meta space, in UTF-8.
inline constexpr std::string_view kMetaSpace = "\xE2\x96\x81";

enum class SpmMergeOrder {
  // Higher score merges first; equal scores: longer left part, then longer right part, then
  // the lower token id (the order transformers derives merges in from scores).
  kByScore,
  // Lower token id merges first. transformers does this for Gemma, whose scores do not follow
  // its merge order while the order of its vocabulary does.
  kByPosition,
};

struct SpmVocabOptions {
  SpmMergeOrder order = SpmMergeOrder::kByScore;
  // Gemma files store the tokens for runs of 2..31 spaces with real spaces, which text (whose
  // spaces become "▁") could never reach; spell them "▁" x length instead, as transformers
  // does, so they take part in merging. Those tokens then stop being user-defined specials.
  bool respell_space_runs = false;
};

class SpmVocab {
 public:
  // Init only; allocates. `tokens`, `types` (empty: all normal) and `scores` (one per token)
  // are borrowed for the call. Control tokens never come out of merging (only matched as
  // specials). kFormatError, naming the GGUF key, when scores are missing, miscounted or
  // not finite, a spelling is longer than 65535 characters, or one of the 256 byte-fallback
  // tokens <0x00>..<0xFF> is missing.
  Status Init(const std::vector<std::string_view>& tokens, const std::vector<int32_t>& types,
              const std::vector<float>& scores, const SpmVocabOptions& options);

  std::string_view Spelling(int32_t id) const { return spellings_.Get(id); }
  // True for a space-run token spelled with "▁" (see respell_space_runs).
  bool Respelled(int32_t id) const { return respelled_[static_cast<size_t>(id)] != 0; }
  // The token spelled a + b, or -1; control tokens are never found.
  int32_t Find(std::string_view a, std::string_view b = {}) const { return index_.Find(a, b); }
  // Merge rank of a token: lower merges first (equal ranks: see SpmMergeOrder).
  uint32_t rank(int32_t id) const { return rank_[static_cast<size_t>(id)]; }
  // Characters (code points) in the token's spelling.
  uint16_t chars(int32_t id) const { return chars_[static_cast<size_t>(id)]; }
  // The <0xNN> token of each byte, for characters no token spells.
  int32_t byte_id(uint8_t b) const { return byte_ids_[b]; }

  size_t bytes() const;

 private:
  Status InitSpellings(const std::vector<std::string_view>& tokens, bool respell_space_runs);
  Status InitRanks(const std::vector<float>& scores, SpmMergeOrder order);

  std::vector<char> text_;
  std::vector<uint32_t> offsets_;
  SpellingTable spellings_;
  std::vector<uint8_t> respelled_;
  std::vector<uint32_t> rank_;
  std::vector<uint16_t> chars_;
  int32_t byte_ids_[256] = {};
  TokenIndex index_;
};

// Writes `spelling` with every "▁" turned back into a space (the bytes a token stands for).
// out must hold spelling.size() bytes; returns the length written.
size_t UnescapeMetaSpace(std::string_view spelling, char* out);

}  // namespace staticlm::text
