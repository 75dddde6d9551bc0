#include "runtime/tokenizer/detokenizer.h"

#include <string_view>

namespace staticlm {

namespace {

void PutReplacement(char* out, size_t* n) {
  out[(*n)++] = static_cast<char>(0xEF);
  out[(*n)++] = static_cast<char>(0xBF);
  out[(*n)++] = static_cast<char>(0xBD);
}

}  // namespace

void Detokenizer::Reset() {
  pending_ = 0;
  expected_ = 0;
}

size_t Detokenizer::CopyPending(uint8_t out[kMaxPendingBytes]) const {
  for (size_t i = 0; i < pending_; ++i) out[i] = held_[i];
  return pending_;
}

Status Detokenizer::RestorePending(const uint8_t* bytes, size_t n) {
  Reset();
  char out[3 * (kMaxPendingBytes + 1)];
  size_t written = 0;
  for (size_t i = 0; i < n && i < kMaxPendingBytes; ++i) Feed(bytes[i], out, &written);
  if (n > kMaxPendingBytes || written != 0 || pending_ != n) {
    Reset();
    return Status::Error(StatusCode::kInvalidArgument,
                         "held text bytes are not the start of a character");
  }
  return Status::Ok();
}

// A byte with nothing held: ASCII passes through, a valid lead byte is held, anything else
// is a one-byte ill-formed subpart. Lead ranges are those of Unicode Table 3-7.
void Detokenizer::Start(uint8_t b, char* out, size_t* n) {
  if (b < 0x80) {
    out[(*n)++] = static_cast<char>(b);
    return;
  }
  lo_ = 0x80;
  hi_ = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) {
    expected_ = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    expected_ = 3;
    if (b == 0xE0) lo_ = 0xA0;  // no overlongs
    if (b == 0xED) hi_ = 0x9F;  // no surrogates
  } else if (b >= 0xF0 && b <= 0xF4) {
    expected_ = 4;
    if (b == 0xF0) lo_ = 0x90;  // no overlongs
    if (b == 0xF4) hi_ = 0x8F;  // nothing above U+10FFFF
  } else {
    PutReplacement(out, n);
    return;
  }
  held_[0] = b;
  pending_ = 1;
}

void Detokenizer::Feed(uint8_t b, char* out, size_t* n) {
  if (pending_ == 0) {
    Start(b, out, n);
    return;
  }
  const uint8_t lo = pending_ == 1 ? lo_ : 0x80;
  const uint8_t hi = pending_ == 1 ? hi_ : 0xBF;
  if (b < lo || b > hi) {
    // The held bytes are a maximal ill-formed subpart; b starts afresh.
    PutReplacement(out, n);
    pending_ = 0;
    Start(b, out, n);
    return;
  }
  if (pending_ + 1 < expected_) {
    held_[pending_++] = b;
    return;
  }
  for (size_t i = 0; i < pending_; ++i) out[(*n)++] = static_cast<char>(held_[i]);
  out[(*n)++] = static_cast<char>(b);
  pending_ = 0;
}

Status Detokenizer::Push(const Tokenizer& tokenizer, int32_t id, char* out, size_t cap,
                         size_t* n_out) {
  *n_out = 0;
  if (id < 0 || id >= tokenizer.vocab_size()) {
    return Status::Error(StatusCode::kInvalidArgument, "token id out of range");
  }
  const std::string_view bytes = tokenizer.TokenBytesView(id);
  if (cap < 3 * (pending_ + bytes.size())) {
    return Status::Error(StatusCode::kInvalidArgument, "detokenizer output buffer is too small");
  }
  size_t n = 0;
  for (char c : bytes) Feed(static_cast<uint8_t>(c), out, &n);
  *n_out = n;
  return Status::Ok();
}

size_t Detokenizer::Flush(char* out, size_t cap) {
  if (pending_ == 0) return 0;
  if (cap < 3) return 0;
  size_t n = 0;
  PutReplacement(out, &n);
  pending_ = 0;
  return n;
}

}  // namespace staticlm
