// Error-message helpers shared by the parsing stages.
#include <cstdarg>
#include <cstdio>

#include "runtime/gguf/gguf_parse.h"

namespace staticlm::gguf {

PrintableName Printable(std::string_view name) {
  constexpr size_t kMaxShown = 60;
  PrintableName out;
  size_t n = name.size() < kMaxShown ? name.size() : kMaxShown;
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(name[i]);
    // Bytes >= 0x80 are kept so UTF-8 names print; control bytes and quotes are not.
    out.text[i] = (c < 0x20 || c == 0x7f || c == '\'') ? '?' : static_cast<char>(c);
  }
  if (name.size() > kMaxShown) {
    out.text[n++] = '.';
    out.text[n++] = '.';
    out.text[n++] = '.';
  }
  out.text[n] = '\0';
  return out;
}

Subject Named(const char* kind, std::string_view name) {
  Subject s;
  std::snprintf(s.text, sizeof(s.text), "%s '%s'", kind, Printable(name).text);
  return s;
}

Subject Numbered(const char* kind, uint64_t index) {
  Subject s;
  std::snprintf(s.text, sizeof(s.text), "%s #%llu", kind, static_cast<unsigned long long>(index));
  return s;
}

Status Fail(const Subject& subject, uint64_t at, const char* format, ...) {
  char detail[160];
  va_list args;
  va_start(args, format);
  std::vsnprintf(detail, sizeof(detail), format, args);
  va_end(args);
  return Status::Error(StatusCode::kFormatError, "%s at byte %llu: %s", subject.text,
                       static_cast<unsigned long long>(at), detail);
}

}  // namespace staticlm::gguf
