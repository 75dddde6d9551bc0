// UTF-8 helpers for the tokenizer: strict validation, decoding of already-validated text,
// encoding, and the code point classes of the pre-tokenizer. Nothing here allocates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "runtime/tokenizer/unicode_tables.h"

namespace staticlm::text {

constexpr uint32_t kReplacementChar = 0xFFFD;

// True when `s` is well-formed UTF-8: no stray continuation bytes, no truncated, overlong or
// surrogate sequences, nothing above U+10FFFF. On false, *bad_offset (if given) is the offset
// of the first byte of the first ill-formed sequence.
bool IsValidUtf8(std::string_view s, size_t* bad_offset);

// Decodes the code point starting at p and returns its length in bytes (1..4). The bytes
// must be well-formed UTF-8 (checked earlier by IsValidUtf8); nothing is checked here.
inline int DecodeValidUtf8(const char* p, uint32_t* cp) {
  const auto b0 = static_cast<uint8_t>(p[0]);
  if (b0 < 0x80) {
    *cp = b0;
    return 1;
  }
  const auto b1 = static_cast<uint32_t>(static_cast<uint8_t>(p[1]) & 0x3F);
  if (b0 < 0xE0) {
    *cp = ((b0 & 0x1Fu) << 6) | b1;
    return 2;
  }
  const auto b2 = static_cast<uint32_t>(static_cast<uint8_t>(p[2]) & 0x3F);
  if (b0 < 0xF0) {
    *cp = ((b0 & 0x0Fu) << 12) | (b1 << 6) | b2;
    return 3;
  }
  const auto b3 = static_cast<uint32_t>(static_cast<uint8_t>(p[3]) & 0x3F);
  *cp = ((b0 & 0x07u) << 18) | (b1 << 12) | (b2 << 6) | b3;
  return 4;
}

// Writes the UTF-8 encoding of `cp` (at most U+10FFFF, not a surrogate) to out and returns
// its length in bytes.
size_t EncodeUtf8(uint32_t cp, char out[4]);

// The pre-tokenizer class of a code point: a table lookup for ASCII, a binary search over
// the generated ranges otherwise.
CodePointClass ClassifyCodePoint(uint32_t cp);
// The finer kind (letter case, marks) the gpt-4o pattern reads, the same way.
CodePointKind CodePointKindOf(uint32_t cp);

// In valid UTF-8 `text`: the start of the run of whitespace (kSpace) code points that ends
// at `end`, going back no further than `begin`; and the end of the run starting at `pos`.
// They place the edges of an added token's lstrip / rstrip.
size_t TrimTrailingSpace(std::string_view text, size_t begin, size_t end);
size_t SkipSpace(std::string_view text, size_t pos);

}  // namespace staticlm::text
