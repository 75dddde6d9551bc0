#include "platform/huge_pages.h"

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace staticlm {
namespace {

// The bracketed word of sysfs' "always [madvise] never", as a static string.
const char* ReadMode() {
  FILE* f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (f == nullptr) return "unavailable";
  char line[128] = {0};
  const bool read = std::fgets(line, sizeof(line), f) != nullptr;
  std::fclose(f);
  if (!read) return "unavailable";
  for (const char* mode : {"always", "madvise", "never"}) {
    char bracketed[16];
    std::snprintf(bracketed, sizeof(bracketed), "[%s]", mode);
    if (std::strstr(line, bracketed) != nullptr) return mode;
  }
  return "unavailable";
}

size_t ReadPageBytes() {
  FILE* f = std::fopen("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "r");
  if (f == nullptr) return 0;
  unsigned long long bytes = 0;
  const bool read = std::fscanf(f, "%llu", &bytes) == 1;
  std::fclose(f);
  // A power of two no larger than 32 MiB (arm64 with 64 KiB pages has 512 MiB ones, which
  // would round small buffers up by too much: those stay on normal pages).
  constexpr unsigned long long kLargest = 32ull << 20;
  if (!read || bytes == 0 || (bytes & (bytes - 1)) != 0 || bytes > kLargest) return 0;
  return static_cast<size_t>(bytes);
}

HugePageSystem Query() {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  const char* mode = ReadMode();
  const bool usable = std::strcmp(mode, "always") == 0 || std::strcmp(mode, "madvise") == 0;
  return {mode, usable ? ReadPageBytes() : 0};
#else
  return {"unavailable", 0};
#endif
}

}  // namespace

const HugePageSystem& QueryHugePages() {
  static const HugePageSystem system = Query();
  return system;
}

void* MapHugePages(size_t bytes) {
  const size_t page = QueryHugePages().page_bytes;
  if (page == 0 || bytes == 0 || bytes % page != 0) return nullptr;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // One huge page more than asked, then the unaligned head and the tail given back.
  const size_t span = bytes + page;
  void* raw = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + page - 1) / page * page;
  if (aligned > start) ::munmap(raw, aligned - start);
  const uintptr_t tail = aligned + bytes, end = start + span;
  if (end > tail) ::munmap(reinterpret_cast<void*>(tail), end - tail);
  void* data = reinterpret_cast<void*>(aligned);
  ::madvise(data, bytes, MADV_HUGEPAGE);  // a refusal leaves normal pages: still correct
  return data;
#else
  return nullptr;
#endif
}

void UnmapHugePages(void* data, size_t bytes) {
#if defined(__linux__)
  if (data != nullptr) ::munmap(data, bytes);
#else
  (void)data;
  (void)bytes;
#endif
}

size_t ResidentHugePageBytes(const void* data, size_t bytes) {
  FILE* f = std::fopen("/proc/self/smaps", "r");
  if (f == nullptr) return 0;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data), end = begin + bytes;
  uintptr_t vma_begin = 0, vma_end = 0;
  double total = 0;
  char line[512];
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    uintptr_t a = 0, b = 0;
    unsigned long long kib = 0;
    if (std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &a, &b) == 2 && b > a) {
      vma_begin = a;  // a mapping's header line: its fields follow
      vma_end = b;
    } else if (std::sscanf(line, "AnonHugePages: %llu kB", &kib) == 1 && kib > 0) {
      const uintptr_t lo = vma_begin > begin ? vma_begin : begin;
      const uintptr_t hi = vma_end < end ? vma_end : end;
      if (hi > lo) {
        total += static_cast<double>(kib) * 1024.0 * static_cast<double>(hi - lo) /
                 static_cast<double>(vma_end - vma_begin);
      }
    }
  }
  std::fclose(f);
  return static_cast<size_t>(total);
}

}  // namespace staticlm
