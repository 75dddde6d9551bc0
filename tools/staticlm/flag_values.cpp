#include "tools/staticlm/flag_values.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace staticlm::cli {

bool ParseInt(const char* flag, const char* text, int64_t min, int64_t max, int64_t* out) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < min || v > max) {
    std::fprintf(stderr, "staticlm: %s expects an integer in [%lld, %lld], got '%s'\n", flag,
                 static_cast<long long>(min), static_cast<long long>(max), text);
    return false;
  }
  *out = v;
  return true;
}

bool ParseI32(const char* flag, const char* text, int64_t min, int64_t max, int32_t* out) {
  int64_t v = 0;
  if (!ParseInt(flag, text, min, max, &v)) return false;
  *out = static_cast<int32_t>(v);
  return true;
}

bool ParseFloat(const char* flag, const char* text, float* out) {
  char* end = nullptr;
  errno = 0;
  float v = std::strtof(text, &end);
  if (errno != 0 || end == text || *end != '\0' || !std::isfinite(v)) {
    std::fprintf(stderr, "staticlm: %s expects a number, got '%s'\n", flag, text);
    return false;
  }
  *out = v;
  return true;
}

bool ParseKv(const char* text, staticlm_kv_type* out) {
  if (std::strcmp(text, "f16") == 0) {
    *out = STATICLM_KV_F16;
  } else if (std::strcmp(text, "f32") == 0) {
    *out = STATICLM_KV_F32;
  } else {
    std::fprintf(stderr, "staticlm: --kv expects f16 or f32, got '%s'\n", text);
    return false;
  }
  return true;
}

bool ParseRunSwitch(const char* flag, staticlm_limits* limits) {
  if (std::strcmp(flag, "--reference") == 0) {
    limits->reference_kernels = 1;
  } else if (std::strcmp(flag, "--busy-wait") == 0) {
    limits->busy_wait = 1;
  } else if (std::strcmp(flag, "--pin") == 0) {
    limits->pin_threads = 1;
  } else {
    return false;
  }
  return true;
}

}  // namespace staticlm::cli
