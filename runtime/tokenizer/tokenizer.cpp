// Tokenizer: the run-phase calls (Encode and token lookups). Init is in tokenizer_init.cpp.
#include "runtime/tokenizer/tokenizer.h"

#include <cstring>

#include "runtime/tokenizer/utf8.h"

namespace staticlm {

namespace {

Status OutputTooSmall() {
  return Status::Error(StatusCode::kInvalidArgument, "token output buffer is too small");
}

}  // namespace

size_t Tokenizer::ScratchBytes() const {
  return text_.capacity() + bytes_.capacity() +
         (text_offsets_.capacity() + bytes_offsets_.capacity()) * sizeof(uint32_t) +
         attrs_.capacity() + special_index_.bytes() + user_index_.bytes() +
         special_lengths_.capacity() * sizeof(uint32_t) + merges_.bytes() + bpe_.bytes() +
         spm_vocab_.bytes() + spm_.bytes() + normalized_.capacity() + normal_index_.bytes() +
         nfc_.bytes();
}

bool Tokenizer::IsEndOfGeneration(int32_t id) const {
  return id >= 0 && id < vocab_size() && (attrs_[id] & kAttrEndOfGen) != 0;
}

bool Tokenizer::IsControl(int32_t id) const {
  return id >= 0 && id < vocab_size() && (attrs_[id] & kAttrControl) != 0;
}

std::string_view Tokenizer::TokenText(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return {};
  return std::string_view(text_.data() + text_offsets_[id],
                          text_offsets_[id + 1] - text_offsets_[id]);
}

std::string_view Tokenizer::TokenBytesView(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return {};
  return std::string_view(bytes_.data() + bytes_offsets_[id],
                          bytes_offsets_[id + 1] - bytes_offsets_[id]);
}

Status Tokenizer::TokenBytes(int32_t id, char* out, size_t cap, size_t* n) const {
  *n = 0;
  if (id < 0 || id >= vocab_size()) {
    return Status::Error(StatusCode::kInvalidArgument, "token id out of range");
  }
  const std::string_view b = TokenBytesView(id);
  if (b.size() > cap) {
    return Status::Error(StatusCode::kInvalidArgument, "token bytes do not fit the buffer");
  }
  if (!b.empty()) std::memcpy(out, b.data(), b.size());
  *n = b.size();
  return Status::Ok();
}

// Encodes text that holds no special token. `at_start`: the stretch begins the whole text.
// Byte-level BPE: pre-tokenize, then BPE each piece.
Status Tokenizer::EncodeStretch(std::string_view text, bool at_start, int32_t* out, size_t capacity,
                                size_t* n) {
  if (nfc_enabled_) text = nfc_.Normalize(text);
  if (model_ == Model::kSpm) return EncodeSpmStretch(text, at_start, out, capacity, n);
  text::PieceSplitter splitter(text, pre_);
  std::string_view piece;
  while (splitter.Next(&piece)) {
    STATICLM_RETURN_IF_ERROR(EncodeBytePiece(piece, out, capacity, n));
  }
  return Status::Ok();
}

// One pre-tokenized piece of byte-level BPE.
Status Tokenizer::EncodeBytePiece(std::string_view piece, int32_t* out, size_t capacity,
                                  size_t* n) {
  int32_t whole = -1;
  if (piece.size() == 1) {
    whole = byte_ids_[static_cast<uint8_t>(piece[0])];
    if (whole < 0) return Status::Ok();  // a byte without a token is dropped, as BpeEncoder does
  } else if (ignore_merges_) {
    whole = normal_index_.Find(piece);  // Llama 3: a piece that is a token stays whole
  }
  if (whole >= 0) {
    if (*n == capacity) return OutputTooSmall();
    out[(*n)++] = whole;
    return Status::Ok();
  }
  size_t written = 0;
  STATICLM_RETURN_IF_ERROR(
      bpe_.Encode(merges_, byte_ids_, piece, out + *n, capacity - *n, &written));
  *n += written;
  return Status::Ok();
}

Status Tokenizer::Encode(std::string_view text, bool parse_special, int32_t* out, size_t capacity,
                         size_t* n_out) {
  *n_out = 0;
  if (!initialized_) {
    return Status::Error(StatusCode::kInvalidState, "tokenizer used before Init");
  }
  if (text.size() > max_text_bytes_) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "text is longer than the tokenizer's max_text_bytes");
  }
  if (!text::IsValidUtf8(text, nullptr)) {
    return Status::Error(StatusCode::kInvalidArgument, "text is not valid UTF-8");
  }
  size_t n = 0;
  if (add_bos_) {
    if (capacity == 0) return OutputTooSmall();
    out[n++] = bos_id_;
  }
  size_t stretch_start = 0;
  for (size_t pos = 0; pos < text.size();) {
    const int32_t id = MatchSpecial(text, pos, parse_special);
    if (id < 0) {
      ++pos;
      continue;
    }
    // lstrip / rstrip: the token swallows the whitespace beside it.
    const size_t end =
        (attrs_[id] & kAttrLstrip) != 0 ? text::TrimTrailingSpace(text, stretch_start, pos) : pos;
    STATICLM_RETURN_IF_ERROR(EncodeStretch(text.substr(stretch_start, end - stretch_start),
                                           stretch_start == 0, out, capacity, &n));
    if (n == capacity) return OutputTooSmall();
    out[n++] = id;
    pos += TokenText(id).size();
    if ((attrs_[id] & kAttrRstrip) != 0) pos = text::SkipSpace(text, pos);
    stretch_start = pos;
  }
  STATICLM_RETURN_IF_ERROR(
      EncodeStretch(text.substr(stretch_start), stretch_start == 0, out, capacity, &n));
  *n_out = n;
  return Status::Ok();
}

}  // namespace staticlm
