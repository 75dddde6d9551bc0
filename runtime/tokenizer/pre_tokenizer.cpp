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
  return SpacesWithLineBreaksEnd(pos);
}

// At whitespace: \s*[\r\n]+ (the run up to and including its last line break), else
// \s+(?!\S)|\s+ — the last alternatives of the Llama 3, Qwen2 and gpt-4o patterns.
size_t PieceSplitter::SpacesWithLineBreaksEnd(size_t pos) const {
  size_t end = pos;
  size_t line_break_end = 0;
  while (end < text_.size()) {
    size_t n = 0;
    if (ClassAt(end, &n) != kSpace) break;
    if (IsCrLf(text_[end])) line_break_end = n;
    end = n;
  }
  if (line_break_end != 0) return line_break_end;
  return WhitespaceEnd(pos);
}

namespace {

// gpt-4o's letter sets: [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] ("upper") and
// [\p{Ll}\p{Lm}\p{Lo}\p{M}] ("lower"); Lm, Lo and marks are in both.
bool InUpperSet(CodePointKind k) {
  return k == kKindUpper || k == kKindLetter || k == kKindMark;
}
bool InLowerSet(CodePointKind k) {
  return k == kKindLower || k == kKindLetter || k == kKindMark;
}

}  // namespace

// From `start`, "[upper]*[lower]+" (lower_run_required) or "[upper]+[lower]*": the end of the
// match, or npos. Greedy with backtracking, worked out: the upper run goes as far as it can;
// a lower run after it extends the match to that run's end. Without one, the first form backs
// off to the last code point of the upper run that is also in the lower set, if any.
size_t PieceSplitter::CasedWordEnd(size_t start, bool lower_run_required) const {
  const size_t size = text_.size(), npos = std::string_view::npos;
  size_t pos = start, last_lower_end = npos, next = 0;
  while (pos < size) {
    uint32_t cp = 0;
    next = pos + static_cast<size_t>(DecodeValidUtf8(text_.data() + pos, &cp));
    const CodePointKind k = CodePointKindOf(cp);
    if (!InUpperSet(k)) break;
    if (InLowerSet(k)) last_lower_end = next;
    pos = next;
  }
  const bool any_upper = pos > start;
  size_t end = pos;
  while (end < size) {
    uint32_t cp = 0;
    next = end + static_cast<size_t>(DecodeValidUtf8(text_.data() + end, &cp));
    if (!InLowerSet(CodePointKindOf(cp))) break;
    end = next;
  }
  if (!lower_run_required && !any_upper) return npos;
  if (end > pos) return end;  // a lower run after the upper one
  return lower_run_required ? last_lower_end : pos;
}

// (?i:'s|'t|'re|'ve|'m|'ll|'d)? after a word ending at `end`.
size_t PieceSplitter::WithContraction(size_t end) const {
  if (end < text_.size() && text_[end] == '\'') {
    end += ContractionLength(text_.data() + end, text_.size() - end, true);
  }
  return end;
}

// The gpt-4o pattern at pos, its alternatives tried in order (see the header).
size_t PieceSplitter::PieceEndGpt4o(size_t pos) const {
  const size_t size = text_.size(), npos = std::string_view::npos;
  uint32_t cp = 0;
  const size_t next = pos + static_cast<size_t>(DecodeValidUtf8(text_.data() + pos, &cp));
  const CodePointKind kind = CodePointKindOf(cp);
  const CodePointClass cls = CodePointClassOf(kind);
  // [^\r\n\p{L}\p{N}]? before either word form: tried with it first, then without.
  const bool prefix = cls != kLetter && cls != kNumber && !IsCrLf(text_[pos]);
  for (bool lower_run_required : {true, false}) {
    if (prefix && next < size) {
      const size_t end = CasedWordEnd(next, lower_run_required);
      if (end != npos) return WithContraction(end);
    }
    const size_t end = CasedWordEnd(pos, lower_run_required);
    if (end != npos) return WithContraction(end);
  }
  // \p{N}{1,3}
  if (cls == kNumber) {
    size_t end = next, after = 0;
    for (int k = 1; k < 3 && end < size && ClassAt(end, &after) == kNumber; ++k) end = after;
    return end;
  }
  // " ?[^\s\p{L}\p{N}]+[\r\n/]*"
  size_t after = 0;
  const int next_cls = next < size ? ClassAt(next, &after) : -1;
  size_t run = npos;
  if (cls == kOther) {
    run = RunEnd(pos, kOther);
  } else if (text_[pos] == ' ' && next_cls == kOther) {
    run = RunEnd(next, kOther);
  }
  if (run != npos) {
    while (run < size && (IsCrLf(text_[run]) || text_[run] == '/')) ++run;
    return run;
  }
  return SpacesWithLineBreaksEnd(pos);
}

bool PieceSplitter::Next(std::string_view* piece) {
  if (pos_ >= text_.size()) return false;
  size_t end = 0;
  if (kind_ == PreTokenizerKind::kLlama3) {
    end = PieceEndLlama3(pos_, 3);
  } else if (kind_ == PreTokenizerKind::kQwen2) {
    end = PieceEndLlama3(pos_, 1);
  } else if (kind_ == PreTokenizerKind::kGpt4o) {
    end = PieceEndGpt4o(pos_);
  } else {
    end = PieceEnd(pos_);
  }
  *piece = text_.substr(pos_, end - pos_);
  pos_ = end;
  return true;
}

}  // namespace staticlm::text
