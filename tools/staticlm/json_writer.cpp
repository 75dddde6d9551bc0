#include "tools/staticlm/json_writer.h"

namespace staticlm::cli {

void WriteJsonString(FILE* out, const char* text, size_t bytes) {
  std::fputc('"', out);
  for (size_t i = 0; i < bytes; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    switch (c) {
      case '"':
        std::fputs("\\\"", out);
        break;
      case '\\':
        std::fputs("\\\\", out);
        break;
      case '\n':
        std::fputs("\\n", out);
        break;
      case '\r':
        std::fputs("\\r", out);
        break;
      case '\t':
        std::fputs("\\t", out);
        break;
      default:
        if (c < 0x20) {
          std::fprintf(out, "\\u%04x", c);
        } else {
          std::fputc(c, out);
        }
    }
  }
  std::fputc('"', out);
}

void WriteJsonIntArray(FILE* out, const int32_t* values, size_t n) {
  std::fputc('[', out);
  for (size_t i = 0; i < n; ++i) std::fprintf(out, i == 0 ? "%d" : ", %d", values[i]);
  std::fputc(']', out);
}

}  // namespace staticlm::cli
