#include "runtime/tokenizer/utf8.h"

namespace staticlm::text {

namespace {

// The valid range of the second byte of a sequence led by b0 (Unicode Table 3-7), which
// excludes overlongs, surrogates and code points above U+10FFFF; later bytes are 80..BF.
struct LeadInfo {
  int length;  // 0: b0 cannot start a sequence
  uint8_t lo;
  uint8_t hi;
};

LeadInfo Lead(uint8_t b0) {
  if (b0 >= 0xC2 && b0 <= 0xDF) return {2, 0x80, 0xBF};
  if (b0 == 0xE0) return {3, 0xA0, 0xBF};
  if (b0 == 0xED) return {3, 0x80, 0x9F};
  if (b0 >= 0xE1 && b0 <= 0xEF) return {3, 0x80, 0xBF};
  if (b0 == 0xF0) return {4, 0x90, 0xBF};
  if (b0 >= 0xF1 && b0 <= 0xF3) return {4, 0x80, 0xBF};
  if (b0 == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

}  // namespace

bool IsValidUtf8(std::string_view s, size_t* bad_offset) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    const LeadInfo lead = Lead(p[i]);
    bool ok = lead.length != 0 && i + lead.length <= n;
    if (ok) ok = p[i + 1] >= lead.lo && p[i + 1] <= lead.hi;
    for (int k = 2; ok && k < lead.length; ++k) ok = (p[i + k] & 0xC0) == 0x80;
    if (!ok) {
      if (bad_offset != nullptr) *bad_offset = i;
      return false;
    }
    i += lead.length;
  }
  return true;
}

size_t EncodeUtf8(uint32_t cp, char out[4]) {
  if (cp < 0x80) {
    out[0] = static_cast<char>(cp);
    return 1;
  }
  if (cp < 0x800) {
    out[0] = static_cast<char>(0xC0 | (cp >> 6));
    out[1] = static_cast<char>(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = static_cast<char>(0xE0 | (cp >> 12));
    out[1] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out[2] = static_cast<char>(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = static_cast<char>(0xF0 | (cp >> 18));
  out[1] = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
  out[2] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
  out[3] = static_cast<char>(0x80 | (cp & 0x3F));
  return 4;
}

CodePointClass ClassifyCodePoint(uint32_t cp) {
  return CodePointClassOf(CodePointKindOf(cp));
}

CodePointKind CodePointKindOf(uint32_t cp) {
  if (cp < 128) return static_cast<CodePointKind>(kAsciiKind[cp]);
  size_t lo = 0;
  size_t hi = kCodePointRangeCount;
  while (lo < hi) {  // first range whose last >= cp
    const size_t mid = lo + (hi - lo) / 2;
    if (kCodePointRanges[mid].last < cp) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo < kCodePointRangeCount && kCodePointRanges[lo].first <= cp) {
    return kCodePointRanges[lo].kind;
  }
  return kKindOther;
}

size_t TrimTrailingSpace(std::string_view text, size_t begin, size_t end) {
  while (end > begin) {
    size_t start = end - 1;
    while (start > begin && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80) --start;
    uint32_t cp = 0;
    DecodeValidUtf8(text.data() + start, &cp);
    if (ClassifyCodePoint(cp) != kSpace) break;
    end = start;
  }
  return end;
}

size_t SkipSpace(std::string_view text, size_t pos) {
  while (pos < text.size()) {
    uint32_t cp = 0;
    const int len = DecodeValidUtf8(text.data() + pos, &cp);
    if (ClassifyCodePoint(cp) != kSpace) break;
    pos += static_cast<size_t>(len);
  }
  return pos;
}

}  // namespace staticlm::text
