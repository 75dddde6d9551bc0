#include "runtime/tokenizer/spm_encoder.h"

#include "runtime/tokenizer/utf8.h"

namespace staticlm::text {

Status SpmEncoder::Init(size_t max_symbols) {
  if (max_symbols == 0 || max_symbols > (size_t{1} << 31)) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "SentencePiece symbol limit %zu is outside 1..2^31", max_symbols);
  }
  max_symbols_ = max_symbols;
  id_.assign(max_symbols, -1);
  prev_.assign(max_symbols, -1);
  next_.assign(max_symbols, -1);
  heap_.assign(3 * max_symbols, Entry{0, 0});
  heap_size_ = 0;
  return Status::Ok();
}

void SpmEncoder::HeapPush(const Entry& e) {
  size_t i = heap_size_++;
  while (i > 0) {
    const size_t parent = (i - 1) / 2;
    if (!(e < heap_[parent])) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = e;
}

SpmEncoder::Entry SpmEncoder::HeapPop() {
  const Entry top = heap_[0];
  const Entry last = heap_[--heap_size_];
  size_t i = 0;
  for (;;) {
    size_t child = 2 * i + 1;
    if (child >= heap_size_) break;
    if (child + 1 < heap_size_ && heap_[child + 1] < heap_[child]) ++child;
    if (!(heap_[child] < last)) break;
    heap_[i] = heap_[child];
    i = child;
  }
  if (heap_size_ > 0) heap_[i] = last;
  return top;
}

// The token the symbol at `left` and its right neighbour merge into, or -1.
int32_t SpmEncoder::MergedId(const SpmVocab& vocab, int32_t left) const {
  const int32_t right = next_[left];
  if (right < 0) return -1;
  return vocab.Find(vocab.Spelling(id_[left]), vocab.Spelling(id_[right]));
}

void SpmEncoder::PushPair(const SpmVocab& vocab, int32_t left) {
  const int32_t merged = MergedId(vocab, left);
  if (merged < 0) return;
  const uint64_t left_chars = 0xFFFFu - vocab.chars(id_[left]);
  const uint64_t right_chars = 0xFFFFu - vocab.chars(id_[next_[left]]);
  const Entry e{(uint64_t{vocab.rank(merged)} << 32) | (left_chars << 16) | right_chars,
                (static_cast<uint64_t>(merged) << 32) | static_cast<uint32_t>(left)};
  HeapPush(e);
}

// One symbol per character, or per byte of a character no token spells.
bool SpmEncoder::AddSymbols(const SpmVocab& vocab, std::string_view normalized, size_t* count) {
  size_t n = 0;
  for (size_t i = 0; i < normalized.size();) {
    uint32_t cp = 0;
    const auto len = static_cast<size_t>(DecodeValidUtf8(normalized.data() + i, &cp));
    const int32_t id = vocab.Find(normalized.substr(i, len));
    const size_t needed = id >= 0 ? 1 : len;
    if (n + needed > max_symbols_) return false;
    for (size_t k = 0; k < needed; ++k) {
      id_[n] = id >= 0 ? id : vocab.byte_id(static_cast<uint8_t>(normalized[i + k]));
      prev_[n] = static_cast<int32_t>(n) - 1;
      next_[n] = static_cast<int32_t>(n) + 1;
      ++n;
    }
    i += len;
  }
  if (n > 0) next_[n - 1] = -1;
  *count = n;
  return true;
}

Status SpmEncoder::Encode(const SpmVocab& vocab, std::string_view normalized, int32_t* out,
                          size_t capacity, size_t* n_out) {
  *n_out = 0;
  size_t n = 0;
  if (!AddSymbols(vocab, normalized, &n)) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "text needs more symbols than the SentencePiece scratch holds");
  }
  if (n == 0) return Status::Ok();
  heap_size_ = 0;
  for (size_t i = 0; i + 1 < n; ++i) PushPair(vocab, static_cast<int32_t>(i));

  while (heap_size_ > 0) {
    const Entry e = HeapPop();
    const auto left = static_cast<int32_t>(e.order & 0xFFFFFFFFu);
    const auto merged = static_cast<int32_t>(e.order >> 32);
    // Stale when the left symbol was absorbed or the pair at `left` changed since the push.
    if (id_[left] < 0 || MergedId(vocab, left) != merged) continue;
    const int32_t right = next_[left];
    id_[left] = merged;
    id_[right] = -1;
    next_[left] = next_[right];
    if (next_[right] >= 0) prev_[next_[right]] = left;
    if (prev_[left] >= 0) PushPair(vocab, prev_[left]);
    PushPair(vocab, left);
  }

  size_t count = 0;
  for (int32_t i = 0; i >= 0; i = next_[i]) {
    if (count == capacity) {
      return Status::Error(StatusCode::kInvalidArgument, "token output buffer is too small");
    }
    out[count++] = id_[i];
  }
  *n_out = count;
  return Status::Ok();
}

}  // namespace staticlm::text
