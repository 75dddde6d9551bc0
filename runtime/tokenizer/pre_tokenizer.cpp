#include "runtime/tokenizer/pre_tokenizer.h"

#include <cstdint>

#include "runtime/tokenizer/utf8.h"

namespace staticlm::text {

namespace {

// The length of the contraction ('s 't 're 've 'm 'll 'd) starting at p[0] == '\'', or 0.
// GPT-2 matches lower case only; the Llama 3 and Qwen2 patterns match any case, (?i:...).
size_t ContractionLength(const char* p, size_t avail, bool any_case) {
  if (avail < 2) return 0;
  const auto lower = [any_case](char c) {
    return any_case && c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  };
  const char c1 = lower(p[1]);
  if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return 2;
  if (avail < 3) return 0;
  const char c2 = lower(p[2]);
  if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) return 3;
  return 0;
}

bool IsCrLf(char c) {
  return c == '\r' || c == '\n';
}

bool IsDigitsFirst(PreTokenizerKind kind) {
  return kind == PreTokenizerKind::kDigitsThenGpt2 || kind == PreTokenizerKind::kDigitRunsThenGpt2;
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
  if (!IsDigitsFirst(kind_)) return false;
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
  const bool digits_first = IsDigitsFirst(kind_);
  if (cls == kNumber && digits_first) {
    return kind_ == PreTokenizerKind::kDigitsThenGpt2 ? next : RunEnd(pos, kNumber);
  }
  if (text_[pos] == '\'') {
    const size_t n = ContractionLength(text_.data() + pos, text_.size() - pos, false);
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

// The end of the run of '\r' and '\n' starting at pos ([\r\n]*).
size_t PieceSplitter::CrLfRunEnd(size_t pos) const {
  while (pos < text_.size() && IsCrLf(text_[pos])) ++pos;
  return pos;
}

// The Llama 3 / Qwen2 pattern at pos, its alternatives tried in order (see the header).
size_t PieceSplitter::PieceEndLlama3(size_t pos, size_t max_digits) const {
  size_t next = 0;
  const int cls = ClassAt(pos, &next);
  const size_t size = text_.size();
  if (text_[pos] == '\'') {
    const size_t n = ContractionLength(text_.data() + pos, size - pos, true);
    if (n != 0) return pos + n;
  }
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (cls == kLetter) return RunEnd(pos, kLetter);
  size_t after = 0;
  const int next_cls = next < size ? ClassAt(next, &after) : -1;
  if (cls != kNumber && !IsCrLf(text_[pos]) && next_cls == kLetter) return RunEnd(next, kLetter);
  // \p{N}{1,3} or \p{N}
  if (cls == kNumber) {
    size_t end = next;
    for (size_t k = 1; k < max_digits && end < size && ClassAt(end, &after) == kNumber; ++k) {
      end = after;
    }
    return end;
  }
  // " ?[^\s\p{L}\p{N}]+[\r\n]*"
  if (cls == kOther) return CrLfRunEnd(RunEnd(pos, kOther));
  if (text_[pos] == ' ' && next_cls == kOther) return CrLfRunEnd(RunEnd(next, kOther));
  // \s*[\r\n]+: the whitespace run up to and including its last line break.
  size_t end = pos;
  size_t line_break_end = 0;
  while (end < size) {
    size_t n = 0;
    if (ClassAt(end, &n) != kSpace) break;
    if (IsCrLf(text_[end])) line_break_end = n;
    end = n;
  }
  if (line_break_end != 0) return line_break_end;
  // \s+(?!\S)|\s+
  return WhitespaceEnd(pos);
}

bool PieceSplitter::Next(std::string_view* piece) {
  if (pos_ >= text_.size()) return false;
  size_t end = 0;
  if (kind_ == PreTokenizerKind::kLlama3) {
    end = PieceEndLlama3(pos_, 3);
  } else if (kind_ == PreTokenizerKind::kQwen2) {
    end = PieceEndLlama3(pos_, 1);
  } else {
    end = PieceEnd(pos_);
  }
  *piece = text_.substr(pos_, end - pos_);
  pos_ = end;
  return true;
}

}  // namespace staticlm::text
