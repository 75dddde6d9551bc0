// TextSink: printf-style appending to a caller's fixed buffer. Text past the end is dropped
// but counted, so a caller can learn the size a report needs and ask again. Never allocates.
#pragma once

#include <cstdarg>
#include <cstddef>
#include <cstdio>

namespace staticlm {

class TextSink {
 public:
  TextSink(char* out, size_t capacity) : out_(out), capacity_(capacity) {
    if (capacity_ > 0) out_[0] = '\0';
  }

  void Add(const char* format, ...) __attribute__((format(printf, 2, 3))) {
    va_list args;
    va_start(args, format);
    char* dst = used_ < capacity_ ? out_ + used_ : nullptr;
    size_t room = used_ < capacity_ ? capacity_ - used_ : 0;
    int n = std::vsnprintf(dst, room, format, args);
    va_end(args);
    if (n > 0) used_ += static_cast<size_t>(n);
  }

  // Bytes the whole text needs, with its terminating NUL.
  size_t needed() const { return used_ + 1; }

 private:
  char* out_;
  size_t capacity_;
  size_t used_ = 0;  // bytes appended so far, including any that did not fit
};

}  // namespace staticlm
