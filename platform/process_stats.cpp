#include "platform/process_stats.h"

#include <fcntl.h>

#include <cstring>

#include "platform/proc_file.h"

namespace staticlm {
namespace {

// /proc/self/status is about 1.5 KiB; the memory lines sit in its first half.
constexpr size_t kStatusBytes = 4096;

// Finds "<key>:   <number> kB" at the start of a line and returns the number in bytes.
uint64_t FieldBytes(const char* key) {
  char text[kStatusBytes];
  if (!ReadSmallFile(AT_FDCWD, "/proc/self/status", text, sizeof(text))) return 0;
  const size_t key_length = std::strlen(key);
  for (const char* line = text; *line != '\0';) {
    if (std::strncmp(line, key, key_length) == 0 && line[key_length] == ':') {
      const char* p = line + key_length + 1;
      while (*p == ' ' || *p == '\t') ++p;
      if (*p < '0' || *p > '9') return 0;
      uint64_t kib = 0;
      for (; *p >= '0' && *p <= '9'; ++p) kib = kib * 10 + static_cast<uint64_t>(*p - '0');
      while (*p == ' ') ++p;
      return std::strncmp(p, "kB", 2) == 0 ? kib * 1024 : 0;
    }
    const char* newline = std::strchr(line, '\n');
    if (newline == nullptr) break;
    line = newline + 1;
  }
  return 0;
}

}  // namespace

uint64_t PeakRssBytes() {
  return FieldBytes("VmHWM");
}

uint64_t CurrentRssBytes() {
  return FieldBytes("VmRSS");
}

uint64_t NonFileRssBytes() {
  // Two reads of the file: the fields may move between them by a few pages, which is well
  // below what this measure is for.
  return FieldBytes("RssAnon") + FieldBytes("RssShmem");
}

}  // namespace staticlm
