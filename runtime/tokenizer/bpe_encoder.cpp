#include "runtime/tokenizer/bpe_encoder.h"

namespace staticlm::text {

Status BpeEncoder::Init(size_t max_piece_bytes) {
  if (max_piece_bytes == 0 || max_piece_bytes > (size_t{1} << 31)) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "BPE piece limit %zu is outside 1..2^31 bytes", max_piece_bytes);
  }
  max_piece_bytes_ = max_piece_bytes;
  id_.assign(max_piece_bytes, -1);
  prev_.assign(max_piece_bytes, -1);
  next_.assign(max_piece_bytes, -1);
  heap_.assign(3 * max_piece_bytes, 0);
  heap_size_ = 0;
  return Status::Ok();
}

void BpeEncoder::HeapPush(uint64_t entry) {
  size_t i = heap_size_++;
  while (i > 0) {
    const size_t parent = (i - 1) / 2;
    if (heap_[parent] <= entry) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = entry;
}

uint64_t BpeEncoder::HeapPop() {
  const uint64_t top = heap_[0];
  const uint64_t last = heap_[--heap_size_];
  size_t i = 0;
  for (;;) {
    size_t child = 2 * i + 1;
    if (child >= heap_size_) break;
    if (child + 1 < heap_size_ && heap_[child + 1] < heap_[child]) ++child;
    if (last <= heap_[child]) break;
    heap_[i] = heap_[child];
    i = child;
  }
  if (heap_size_ > 0) heap_[i] = last;
  return top;
}

void BpeEncoder::PushPair(const MergeTable& merges, int32_t left) {
  const int32_t right = next_[left];
  if (right < 0) return;
  int32_t rank = 0;
  int32_t merged = 0;
  if (!merges.Find(id_[left], id_[right], &rank, &merged)) return;
  HeapPush((static_cast<uint64_t>(static_cast<uint32_t>(rank)) << 32) |
           static_cast<uint32_t>(left));
}

Status BpeEncoder::Encode(const MergeTable& merges, const int32_t (&byte_ids)[256],
                          std::string_view piece, int32_t* out, size_t capacity, size_t* n_out) {
  *n_out = 0;
  const size_t n = piece.size();
  if (n == 0) return Status::Ok();
  if (n > max_piece_bytes_) {
    return Status::Error(StatusCode::kInvalidArgument, "text piece exceeds the BPE scratch");
  }
  // Bytes without a token of their own are dropped, and their neighbours become adjacent,
  // as Hugging Face's BPE does when the model has no unknown token.
  int32_t head = -1;
  int32_t tail = -1;
  for (size_t i = 0; i < n; ++i) {
    const int32_t id = byte_ids[static_cast<uint8_t>(piece[i])];
    if (id < 0) continue;
    const auto pos = static_cast<int32_t>(i);
    id_[i] = id;
    prev_[i] = tail;
    next_[i] = -1;
    if (tail >= 0) {
      next_[tail] = pos;
    } else {
      head = pos;
    }
    tail = pos;
  }
  return MergeAndWrite(merges, head, out, capacity, n_out);
}

Status BpeEncoder::EncodeSymbols(const MergeTable& merges, size_t n, int32_t* out, size_t capacity,
                                 size_t* n_out) {
  *n_out = 0;
  if (n > max_piece_bytes_) {
    return Status::Error(StatusCode::kInvalidArgument, "text piece exceeds the BPE scratch");
  }
  for (size_t i = 0; i < n; ++i) {
    prev_[i] = static_cast<int32_t>(i) - 1;
    next_[i] = i + 1 < n ? static_cast<int32_t>(i) + 1 : -1;
  }
  return MergeAndWrite(merges, n > 0 ? 0 : -1, out, capacity, n_out);
}

// Merges the linked symbols from `head` by rank and writes the result.
Status BpeEncoder::MergeAndWrite(const MergeTable& merges, int32_t head, int32_t* out,
                                 size_t capacity, size_t* n_out) {
  heap_size_ = 0;
  for (int32_t i = head; i >= 0; i = next_[i]) PushPair(merges, i);

  while (heap_size_ > 0) {
    const uint64_t entry = HeapPop();
    const auto rank = static_cast<int32_t>(entry >> 32);
    const auto left = static_cast<int32_t>(entry & 0xFFFFFFFFu);
    const int32_t right = next_[left];
    if (id_[left] < 0 || right < 0) continue;  // stale: the left symbol was absorbed
    int32_t current_rank = 0;
    int32_t merged = 0;
    // Stale when the pair at `left` changed since the push: ranks name exactly one pair.
    if (!merges.Find(id_[left], id_[right], &current_rank, &merged) || current_rank != rank) {
      continue;
    }
    id_[left] = merged;
    id_[right] = -1;
    next_[left] = next_[right];
    if (next_[right] >= 0) prev_[next_[right]] = left;
    if (prev_[left] >= 0) PushPair(merges, prev_[left]);
    PushPair(merges, left);
  }

  size_t count = 0;
  for (int32_t i = head; i >= 0; i = next_[i]) {
    if (count == capacity) {
      return Status::Error(StatusCode::kInvalidArgument, "token output buffer is too small");
    }
    out[count++] = id_[i];
  }
  *n_out = count;
  return Status::Ok();
}

}  // namespace staticlm::text
