// Detokenizer: turns a stream of token ids into UTF-8 text, one token at a time, without
// ever emitting part of a character.
//
// Tokens are byte sequences, and a multi-byte character may be split across two or more of
// them. The bytes of an unfinished character (at most 3) are held until the next token
// completes it. Bytes that can never form a character (a stray continuation byte, an
// overlong or surrogate lead, a sequence cut short) become U+FFFD right away, one per
// maximal ill-formed subpart, as Unicode recommends (and as Python's errors="replace"
// does), so the model cannot make the stream stall. Output is always valid UTF-8.
// Run-phase safe: no allocation, work proportional to the token's length.
#pragma once

#include <cstddef>
#include <cstdint>

#include "platform/status.h"
#include "runtime/tokenizer/tokenizer.h"

namespace staticlm {

class Detokenizer {
 public:
  static constexpr size_t kMaxPendingBytes = 3;

  // The output space one Push can need: every byte (held ones included) could become a
  // three-byte U+FFFD. A buffer this large never makes Push fail for space.
  static size_t MaxPushBytes(const Tokenizer& tokenizer) {
    return 3 * (tokenizer.max_token_bytes() + kMaxPendingBytes);
  }

  // Drops any held bytes: start of a new stream.
  void Reset();

  // Appends the text of token `id` to out[0 .. *n_out). kInvalidArgument for an id out of
  // range, or when cap < 3 * (held bytes + the token's bytes); the state is then unchanged.
  Status Push(const Tokenizer& tokenizer, int32_t id, char* out, size_t cap, size_t* n_out);

  // Ends the stream: a held, unfinished character becomes U+FFFD. Returns the bytes
  // written (0 or 3); with cap < 3 and bytes held it writes nothing and keeps them.
  size_t Flush(char* out, size_t cap);

  size_t pending_bytes() const { return pending_; }

  // The held bytes (at most kMaxPendingBytes), copied to `out`; returns how many. With
  // RestorePending they carry a stream across a saved session.
  size_t CopyPending(uint8_t out[kMaxPendingBytes]) const;
  // Replaces the held bytes with `bytes`, as if they had just been pushed. kInvalidArgument,
  // leaving the stream reset, unless they are the start of one well-formed character.
  Status RestorePending(const uint8_t* bytes, size_t n);

 private:
  // Feeds one byte, writing what it completes to out + *n.
  void Feed(uint8_t b, char* out, size_t* n);
  void Start(uint8_t b, char* out, size_t* n);

  uint8_t held_[kMaxPendingBytes] = {};
  size_t pending_ = 0;   // bytes of an unfinished character held in held_
  size_t expected_ = 0;  // its full length, 2..4
  uint8_t lo_ = 0x80;    // valid range of its second byte
  uint8_t hi_ = 0xBF;
};

}  // namespace staticlm
