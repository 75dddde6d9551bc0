// Parsers of command-line flag values shared by the staticlm commands. Each prints one line
// `staticlm: …` naming the flag and returns false for a bad value.
#pragma once

#include <cstdint>

#include "staticlm/staticlm.h"

namespace staticlm::cli {

bool ParseInt(const char* flag, const char* text, int64_t min, int64_t max, int64_t* out);
bool ParseI32(const char* flag, const char* text, int64_t min, int64_t max, int32_t* out);
bool ParseFloat(const char* flag, const char* text, float* out);
bool ParseKv(const char* text, staticlm_kv_type* out);

}  // namespace staticlm::cli
