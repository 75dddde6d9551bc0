#include "runtime/tokenizer/nfc.h"

#include <algorithm>
#include <cstring>

#include "runtime/tokenizer/unicode_nfc_tables.h"
#include "runtime/tokenizer/utf8.h"

namespace staticlm::text {

namespace {

// Hangul syllables decompose and compose by rule (Unicode 3.12).
constexpr uint32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr uint32_t kLCount = 19, kVCount = 21, kTCount = 28;
constexpr uint32_t kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

uint8_t CombiningClass(uint32_t cp) {
  if (cp < kCombiningClassRanges[0].first) return 0;
  const CombiningClassRange* end = kCombiningClassRanges + kCombiningClassRangeCount;
  const CombiningClassRange* r =
      std::lower_bound(kCombiningClassRanges, end, cp,
                       [](const CombiningClassRange& range, uint32_t c) { return range.last < c; });
  return r != end && r->first <= cp ? r->ccc : 0;
}

const Decomposition* FindDecomposition(uint32_t cp) {
  const Decomposition* end = kDecompositions + kDecompositionCount;
  const Decomposition* d = std::lower_bound(
      kDecompositions, end, cp, [](const Decomposition& e, uint32_t c) { return e.cp < c; });
  return d != end && d->cp == cp ? d : nullptr;
}

// The primary composite of (a, b), or 0.
uint32_t Composite(uint32_t a, uint32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount) {
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  }
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase &&
      b < kTBase + kTCount) {
    return a + (b - kTBase);
  }
  const Composition* end = kCompositions + kCompositionCount;
  const Composition* c = std::lower_bound(
      kCompositions, end, Composition{a, b, 0}, [](const Composition& x, const Composition& y) {
        return x.first < y.first || (x.first == y.first && x.second < y.second);
      });
  return c != end && c->first == a && c->second == b ? c->composite : 0;
}

bool NeedsWork(std::string_view text) {
  const uint32_t first = std::min(kFirstDecomposable, kCombiningClassRanges[0].first);
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    i += static_cast<size_t>(DecodeValidUtf8(text.data() + i, &cp));
    if (cp >= first) return true;
  }
  return false;
}

}  // namespace

Status NfcNormalizer::Init(size_t max_text_bytes) {
  // One code point per input byte at most, each decomposing into at most
  // kNfcMaxDecomposition; the UTF-8 out grows at most kNfcMaxExpansion-fold.
  code_points_.assign(max_text_bytes * kNfcMaxDecomposition + 1, 0);
  out_.assign(max_text_bytes * kNfcMaxExpansion + 4, 0);
  return Status::Ok();
}

size_t NfcNormalizer::Decompose(std::string_view text) {
  size_t n = 0;
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    i += static_cast<size_t>(DecodeValidUtf8(text.data() + i, &cp));
    if (cp >= kSBase && cp < kSBase + kSCount) {
      const uint32_t s = cp - kSBase;
      code_points_[n++] = kLBase + s / kNCount;
      code_points_[n++] = kVBase + (s % kNCount) / kTCount;
      if (s % kTCount != 0) code_points_[n++] = kTBase + s % kTCount;
      continue;
    }
    const Decomposition* d = cp >= kFirstDecomposable ? FindDecomposition(cp) : nullptr;
    if (d == nullptr) {
      code_points_[n++] = cp;
      continue;
    }
    for (size_t k = 0; k < d->length; ++k) code_points_[n++] = kDecompositionPool[d->offset + k];
  }
  return n;
}

// Canonical ordering: a stable insertion sort of each run of non-starters by class.
void NfcNormalizer::Reorder(size_t n) {
  for (size_t i = 1; i < n; ++i) {
    const uint32_t cp = code_points_[i];
    const uint8_t cc = CombiningClass(cp);
    if (cc == 0) continue;
    size_t j = i;
    while (j > 0) {
      const uint8_t prev = CombiningClass(code_points_[j - 1]);
      if (prev == 0 || prev <= cc) break;
      code_points_[j] = code_points_[j - 1];
      --j;
    }
    code_points_[j] = cp;
  }
}

// Canonical composition in place: a character joins the last starter unless blocked (a
// character between them of class 0 or of a class not lower than its own).
size_t NfcNormalizer::Compose(size_t n) {
  size_t out = 0;
  size_t starter = SIZE_MAX;
  uint8_t last_cc = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t cp = code_points_[i];
    const uint8_t cc = CombiningClass(cp);
    if (starter != SIZE_MAX && (out - 1 == starter || last_cc < cc)) {
      const uint32_t composite = Composite(code_points_[starter], cp);
      if (composite != 0) {
        code_points_[starter] = composite;
        continue;
      }
    }
    if (cc == 0) starter = out;
    last_cc = cc;
    code_points_[out++] = cp;
  }
  return out;
}

std::string_view NfcNormalizer::Normalize(std::string_view text) {
  if (!NeedsWork(text)) {
    if (!text.empty()) std::memcpy(out_.data(), text.data(), text.size());
    return std::string_view(out_.data(), text.size());
  }
  size_t n = Decompose(text);
  Reorder(n);
  n = Compose(n);
  size_t len = 0;
  for (size_t i = 0; i < n; ++i) len += EncodeUtf8(code_points_[i], out_.data() + len);
  return std::string_view(out_.data(), len);
}

}  // namespace staticlm::text
