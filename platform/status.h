// Status: the error type of every fallible call in staticlm. No exceptions.
//
// A Status carries a code and a one-line message held inline (no heap). Init-phase
// errors format details into it (file, tensor, offset); run-phase errors copy a static
// message, so returning a Status never allocates in either phase.
#pragma once

#include <cstdarg>
#include <cstdio>

namespace staticlm {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 1,  // a bad limit, token id, flag or prompt
  kIoError = 2,          // a file that cannot be opened, mapped or written
  kFormatError = 3,      // a file whose contents are malformed (truncated, corrupt, out of bounds)
  kUnsupported = 4,      // a well-formed input this build does not handle (architecture, type)
  kOutOfMemory = 5,      // init could not allocate what the plan needs
  kContextFull = 6,      // a step would write past the cache's capacity
  kInvalidState = 7,     // a call made in the wrong phase or order
  kInternal = 8,         // a broken invariant inside staticlm
};

class Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  // Formats a message; used at init, where detail matters more than cost.
  static Status Error(StatusCode code, const char* format, ...)
      __attribute__((format(printf, 2, 3))) {
    Status s;
    s.code_ = code;
    va_list args;
    va_start(args, format);
    std::vsnprintf(s.message_, sizeof(s.message_), format, args);
    va_end(args);
    return s;
  }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const char* message() const { return ok() ? "ok" : message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  char message_[240] = {0};
};

// Returns early from the calling function when `expr` yields an error Status.
#define STATICLM_RETURN_IF_ERROR(expr)   \
  do {                                   \
    ::staticlm::Status status_ = (expr); \
    if (!status_.ok()) return status_;   \
  } while (0)

}  // namespace staticlm
