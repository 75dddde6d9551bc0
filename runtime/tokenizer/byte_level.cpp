#include "runtime/tokenizer/byte_level.h"

#include "runtime/tokenizer/utf8.h"

namespace staticlm::text {

namespace {

// Bytes that GPT-2 keeps as themselves: '!'..'~', '¡'..'¬', '®'..'ÿ'.
bool IsSelfSpelled(uint32_t b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

}  // namespace

// The bytes that are not self-spelled are 00..20, 7F..A0 and AD: 33 + 34 + 1 = 68 of them,
// numbered in byte order from U+0100.
uint32_t ByteToCodePoint(uint8_t b) {
  if (IsSelfSpelled(b)) return b;
  if (b <= 0x20) return 0x100u + b;
  if (b <= 0xA0) return 0x100u + 33 + (b - 0x7Fu);
  return 0x100u + 67;  // 0xAD, the soft hyphen
}

int CodePointToByte(uint32_t cp) {
  if (cp < 0x100) return IsSelfSpelled(cp) ? static_cast<int>(cp) : -1;
  const uint32_t k = cp - 0x100;
  if (k <= 32) return static_cast<int>(k);
  if (k <= 66) return static_cast<int>(0x7F + (k - 33));
  if (k == 67) return 0xAD;
  return -1;
}

bool DecodeByteLevel(std::string_view spelled, char* out, size_t cap, size_t* n_out) {
  *n_out = 0;
  if (!IsValidUtf8(spelled, nullptr)) return false;
  size_t n = 0;
  for (size_t i = 0; i < spelled.size();) {
    uint32_t cp = 0;
    i += static_cast<size_t>(DecodeValidUtf8(spelled.data() + i, &cp));
    const int b = CodePointToByte(cp);
    if (b < 0 || n == cap) return false;
    out[n++] = static_cast<char>(b);
  }
  *n_out = n;
  return true;
}

}  // namespace staticlm::text
