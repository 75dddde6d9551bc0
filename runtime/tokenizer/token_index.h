// TokenIndex: finds a token by its spelling, where the spelling may be given in two parts
// (the spellings of two adjacent symbols, looked up as their concatenation without copying).
// Open addressing over one array of ids sized at init (load factor <= 1/2); the spellings
// themselves stay in the owner's table, which the index borrows.
//
// Lookups are run-phase safe: no allocation, O(spelling length) hashing and a few probes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "platform/status.h"

namespace staticlm::text {

// A vocabulary's spellings: token i is text[offsets[i] .. offsets[i + 1]). Borrowed views.
struct SpellingTable {
  const char* text = nullptr;
  const uint32_t* offsets = nullptr;
  size_t count = 0;

  std::string_view Get(int32_t id) const {
    return std::string_view(text + offsets[id], offsets[id + 1] - offsets[id]);
  }
};

class TokenIndex {
 public:
  // Init only; allocates room for up to `max_tokens` entries. `spellings` is borrowed and
  // must outlive the index (the owner keeps both side by side).
  Status Init(const SpellingTable& spellings, size_t max_tokens);

  // Init only; at most `max_tokens` calls. Makes `id` the token found for its spelling; a spelling
  // already present is taken over by the later id (as a dictionary built in id order would keep the
  // last one).
  void Insert(int32_t id);

  // The token spelled `a` followed by `b`, or -1.
  int32_t Find(std::string_view a, std::string_view b = {}) const;

  size_t bytes() const { return slots_.capacity() * sizeof(int32_t); }

 private:
  static uint64_t Hash(std::string_view a, std::string_view b);
  bool Matches(int32_t id, std::string_view a, std::string_view b) const;

  SpellingTable spellings_;
  std::vector<int32_t> slots_;  // token id, or -1 for an empty slot
  size_t mask_ = 0;
};

}  // namespace staticlm::text
