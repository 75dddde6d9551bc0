#include "runtime/tokenizer/token_index.h"

namespace staticlm::text {

Status TokenIndex::Init(const SpellingTable& spellings, size_t max_tokens) {
  if (max_tokens == 0 || max_tokens > (size_t{1} << 30)) {
    return Status::Error(StatusCode::kInvalidArgument, "token index size %zu is outside 1..2^30",
                         max_tokens);
  }
  spellings_ = spellings;
  size_t capacity = 16;
  while (capacity < 2 * max_tokens) capacity *= 2;
  slots_.assign(capacity, -1);
  mask_ = capacity - 1;
  return Status::Ok();
}

// FNV-1a over the bytes of a then b: the same value as hashing their concatenation.
uint64_t TokenIndex::Hash(std::string_view a, std::string_view b) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : a) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  for (char c : b) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  return h ^ (h >> 29);
}

bool TokenIndex::Matches(int32_t id, std::string_view a, std::string_view b) const {
  const std::string_view s = spellings_.Get(id);
  return s.size() == a.size() + b.size() && s.substr(0, a.size()) == a && s.substr(a.size()) == b;
}

void TokenIndex::Insert(int32_t id) {
  const std::string_view s = spellings_.Get(id);
  for (size_t i = Hash(s, {}) & mask_;; i = (i + 1) & mask_) {
    if (slots_[i] < 0 || Matches(slots_[i], s, {})) {
      slots_[i] = id;
      return;
    }
  }
}

int32_t TokenIndex::Find(std::string_view a, std::string_view b) const {
  if (slots_.empty()) return -1;
  for (size_t i = Hash(a, b) & mask_;; i = (i + 1) & mask_) {
    const int32_t id = slots_[i];
    if (id < 0) return -1;
    if (Matches(id, a, b)) return id;
  }
}

}  // namespace staticlm::text
