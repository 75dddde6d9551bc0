// BpeEncoder: byte-level BPE over one pre-tokenized piece, in scratch sized at init.
//
// The piece starts as one symbol per byte; the adjacent pair with the lowest merge rank is
// merged (the leftmost one among equal ranks) until no pair has a rule. That is the order of
// Hugging Face's BPE and of GPT-2's encoder. Symbols sit in a linked list over fixed arrays
// and candidate pairs in a binary min-heap keyed by (rank, position), with stale entries
// skipped when popped: O(n log n) for a piece of n bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "platform/status.h"
#include "runtime/tokenizer/merge_table.h"

namespace staticlm::text {

class BpeEncoder {
 public:
  // Init only: allocates scratch for pieces of up to `max_piece_bytes` bytes.
  Status Init(size_t max_piece_bytes);

  // Run-phase safe (no allocation). Encodes `piece` into token ids, given the id of each
  // single-byte token (-1: the byte has none and is dropped). Fails with kInvalidArgument when the
  // piece is longer than the init limit or the ids do not fit in `capacity`.
  Status Encode(const MergeTable& merges, const int32_t (&byte_ids)[256], std::string_view piece,
                int32_t* out, size_t capacity, size_t* n_out);

  // Run-phase safe. Merges symbols the caller wrote to symbols()[0 .. n) (valid token ids,
  // n <= max_piece_bytes), as Encode merges a piece's bytes.
  Status EncodeSymbols(const MergeTable& merges, size_t n, int32_t* out, size_t capacity,
                       size_t* n_out);
  int32_t* symbols() { return id_.data(); }

  size_t max_piece_bytes() const { return max_piece_bytes_; }
  size_t bytes() const {
    return (id_.capacity() + prev_.capacity() + next_.capacity()) * sizeof(int32_t) +
           heap_.capacity() * sizeof(uint64_t);
  }

 private:
  void PushPair(const MergeTable& merges, int32_t left);
  Status MergeAndWrite(const MergeTable& merges, int32_t head, int32_t* out, size_t capacity,
                       size_t* n_out);
  void HeapPush(uint64_t entry);
  uint64_t HeapPop();

  size_t max_piece_bytes_ = 0;
  // Symbol i starts at byte i of the piece; a merge keeps the left symbol and kills the
  // right one (id -1).
  std::vector<int32_t> id_;
  std::vector<int32_t> prev_;
  std::vector<int32_t> next_;
  // Entries are (rank << 32 | left symbol). Each merge adds at most two, so 3n bounds it.
  std::vector<uint64_t> heap_;
  size_t heap_size_ = 0;
};

}  // namespace staticlm::text
