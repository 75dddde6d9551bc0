#include "runtime/tokenizer/pre_tokenizer.h"

#include <cstdint>

#include "runtime/tokenizer/utf8.h"

namespace staticlm::text {

namespace {

// The length of the contraction ('s 't 're 've 'm 'll 'd, lower case only, as in GPT-2)
// starting at p[0] == '\'', or 0.
size_t ContractionLength(const char* p, size_t avail) {
  if (avail < 2) return 0;
  const char c1 = p[1];
  if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return 2;
  if (avail < 3) return 0;
  const char c2 = p[2];
  if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) return 3;
  return 0;
}

}  // namespace

int PieceSplitter::ClassAt(size_t pos, size_t* next) const {
  uint32_t cp = 0;
  *next = pos + static_cast<size_t>(DecodeValidUtf8(text_.data() + pos, &cp));
  return ClassifyCodePoint(cp);
}

// The regex sees each stretch between isolated numbers as a whole string, so a number
// (in kDigitsThenGpt2) ends the text as far as the lookahead (?!\S) is concerned.
bool PieceSplitter::AtStretchEnd(size_t pos) const {
  if (pos >= text_.size()) return true;
  if (kind_ != PreTokenizerKind::kDigitsThenGpt2) return false;
  size_t next = 0;
  return ClassAt(pos, &next) == kNumber;
}

// The end of the run of code points of class `cls` starting at pos.
size_t PieceSplitter::RunEnd(size_t pos, int cls) const {
  while (pos < text_.size()) {
    size_t next = 0;
    if (ClassAt(pos, &next) != cls) break;
    pos = next;
  }
  return pos;
}

// \s+(?!\S)|\s+ at a whitespace code point: the whole run if the stretch ends after it;
// otherwise all but its last code point (which may then lead the next piece, as in " the"),
// or the single code point when the run has only one.
size_t PieceSplitter::WhitespaceEnd(size_t pos) const {
  size_t first_end = 0;
  ClassAt(pos, &first_end);
  size_t last_start = pos;
  size_t end = first_end;
  while (end < text_.size()) {
    size_t next = 0;
    if (ClassAt(end, &next) != kSpace) break;
    last_start = end;
    end = next;
  }
  if (AtStretchEnd(end)) return end;
  return last_start > pos ? last_start : first_end;
}

size_t PieceSplitter::PieceEnd(size_t pos) const {
  size_t next = 0;
  const int cls = ClassAt(pos, &next);
  const bool digits_first = kind_ == PreTokenizerKind::kDigitsThenGpt2;
  if (cls == kNumber && digits_first) return next;
  if (text_[pos] == '\'') {
    const size_t n = ContractionLength(text_.data() + pos, text_.size() - pos);
    if (n != 0) return pos + n;
  }
  // " ?X+" for X in letters, numbers, other: an optional leading space joins the run.
  size_t run_start = pos;
  int run_cls = cls;
  if (text_[pos] == ' ' && next < text_.size()) {
    size_t after = 0;
    const int next_cls = ClassAt(next, &after);
    if (next_cls != kSpace) {
      run_start = next;
      run_cls = next_cls;
    }
  }
  if (run_cls == kNumber && digits_first) return next;  // " " before an isolated number
  if (run_cls != kSpace) return RunEnd(run_start, run_cls);
  return WhitespaceEnd(pos);
}

bool PieceSplitter::Next(std::string_view* piece) {
  if (pos_ >= text_.size()) return false;
  const size_t end = PieceEnd(pos_);
  *piece = text_.substr(pos_, end - pos_);
  pos_ = end;
  return true;
}

}  // namespace staticlm::text
