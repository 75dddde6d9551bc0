// The GPT-2 byte-level alphabet. Byte-level BPE vocabularies spell every byte as a printable
// code point, so that raw bytes (spaces, newlines, pieces of multi-byte characters) can sit
// in a text vocabulary: bytes that are printable Latin-1 stand for themselves, the other 68
// are shifted to U+0100..U+0143 in byte order ("Ġ" is the space, "Ċ" the newline).
// Used at init to turn vocabulary strings into the bytes they stand for; no allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace staticlm::text {

// The code point that spells byte `b`.
uint32_t ByteToCodePoint(uint8_t b);

// The byte spelled by code point `cp`, or -1 when cp is not in the alphabet.
int CodePointToByte(uint32_t cp);

// Decodes a byte-level vocabulary string into the bytes it spells, writing at most `cap`
// bytes to out. False when the string is not valid UTF-8, uses a code point outside the
// alphabet, or does not fit.
bool DecodeByteLevel(std::string_view spelled, char* out, size_t cap, size_t* n_out);

}  // namespace staticlm::text
