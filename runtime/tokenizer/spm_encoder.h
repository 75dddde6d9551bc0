// SpmEncoder: SentencePiece-style BPE over one normalized stretch of text (spaces already
// written "▁"), in scratch sized at init.
//
// The stretch starts as one symbol per character: the token spelling that character, or,
// when there is none, its UTF-8 bytes as <0xNN> byte-fallback tokens. Then, repeatedly, of
// all adjacent symbol pairs whose joined spelling is a token, the pair whose merged token
// ranks best is merged (SpmVocab's rank; equal ranks: the longer left part, the longer right
// part, the lower merged id, and finally the leftmost pair). This is the merge order of the
// BPE model transformers builds from a GGUF SentencePiece vocabulary; llama.cpp's SPM
// tokenizer follows the same loop with the token's score as the only key.
//
// Symbols live in a linked list over fixed arrays and candidate pairs in a binary min-heap
// over a fixed array, stale entries skipped when popped. Each merge removes a symbol and
// pushes at most two pairs, so for a stretch of s symbols the heap never holds more than
// 3s entries and the work is O(s log s) heap steps, each with O(L) hashing for tokens of at
// most L bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "platform/status.h"
#include "runtime/tokenizer/spm_vocab.h"

namespace staticlm::text {

class SpmEncoder {
 public:
  // Init only: allocates scratch for stretches of up to `max_symbols` symbols.
  Status Init(size_t max_symbols);

  // Run-phase safe (no allocation). Encodes `normalized` (valid UTF-8) into token ids.
  // kInvalidArgument when it needs more than the init limit of symbols or the ids do not
  // fit in `capacity`.
  Status Encode(const SpmVocab& vocab, std::string_view normalized, int32_t* out, size_t capacity,
                size_t* n_out);

  size_t max_symbols() const { return max_symbols_; }
  size_t bytes() const {
    return (id_.capacity() + prev_.capacity() + next_.capacity()) * sizeof(int32_t) +
           heap_.capacity() * sizeof(Entry);
  }

 private:
  // A candidate merge: lower (key, order) pops first. key packs the merged token's rank and
  // the inverted character lengths of the left and right parts; order packs the merged id
  // and the left symbol's index (leftmost first).
  struct Entry {
    uint64_t key;
    uint64_t order;
    bool operator<(const Entry& o) const {
      return key < o.key || (key == o.key && order < o.order);
    }
  };

  bool AddSymbols(const SpmVocab& vocab, std::string_view normalized, size_t* count);
  int32_t MergedId(const SpmVocab& vocab, int32_t left) const;
  void PushPair(const SpmVocab& vocab, int32_t left);
  void HeapPush(const Entry& e);
  Entry HeapPop();

  size_t max_symbols_ = 0;
  // Symbol i in order of creation; a merge keeps the left symbol and kills the right one
  // (id -1). prev_/next_ link the live symbols.
  std::vector<int32_t> id_;
  std::vector<int32_t> prev_;
  std::vector<int32_t> next_;
  std::vector<Entry> heap_;
  size_t heap_size_ = 0;
};

}  // namespace staticlm::text
