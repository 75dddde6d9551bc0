#include "platform/process_stats.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>

namespace staticlm {
namespace {

// /proc/self/status is about 1.5 KiB; the memory lines sit in its first half.
constexpr size_t kStatusBytes = 4096;

// Reads up to `capacity - 1` bytes of /proc/self/status into `out`, NUL-terminated.
// Returns false when the file cannot be read.
bool ReadStatus(char* out, size_t capacity) {
  int fd;
  do {
    fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return false;
  size_t used = 0;
  while (used + 1 < capacity) {
    ssize_t n = read(fd, out + used, capacity - 1 - used);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    used += static_cast<size_t>(n);
  }
  close(fd);
  out[used] = '\0';
  return used > 0;
}

// Finds "<key>:   <number> kB" at the start of a line and returns the number in bytes.
uint64_t FieldBytes(const char* key) {
  char text[kStatusBytes];
  if (!ReadStatus(text, sizeof(text))) return 0;
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
