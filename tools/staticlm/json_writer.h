// Minimal JSON output for the CLI's --json modes: escaped strings and number arrays.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>

namespace staticlm::cli {

// Writes `bytes` of UTF-8 as a JSON string literal (with quotes), escaping as RFC 8259 requires.
void WriteJsonString(FILE* out, const char* text, size_t bytes);

// Writes [a, b, c].
void WriteJsonIntArray(FILE* out, const int32_t* values, size_t n);

}  // namespace staticlm::cli
