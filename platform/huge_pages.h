// Transparent huge pages for the buffers staticlm allocates at init (packed weights, KV cache,
// arena, io). A decode step streams every weight once: with 4 KiB pages that is one TLB miss
// and page walk per 4 KiB (23,000 for SmolLM2's 92 MiB of packed weights), and the hardware
// prefetchers stop at every page boundary; with 2 MiB pages, 46. Measured on Emerald Rapids
// (2 threads, int8 activations, 8 alternating rounds): SmolLM2 decode faster by a median 28 %,
// Gemma 3 270M by 16 % (README, "Memory"; docs/figures.md, "Huge pages").
//
// Linux only (madvise(MADV_HUGEPAGE), which needs the system's transparent_hugepage mode to be
// "always" or "madvise"); elsewhere, or with the mode "never", buffers keep normal pages and
// results are the same. A read-only file mapping (the GGUF's own tensors) keeps normal pages:
// the kernel does not back regular files' pages with huge ones on demand.
#pragma once

#include <cstddef>

namespace staticlm {

// The system's transparent huge page setting, read once: the mode ("always", "madvise",
// "never", or "unavailable" where the kernel has none) and the huge page size in bytes (0 when
// buffers cannot get huge pages: mode "never" or unavailable). Any phase after the first call
// (the first reads sysfs; call it at init).
struct HugePageSystem {
  const char* mode;
  size_t page_bytes;
};
const HugePageSystem& QueryHugePages();

// Init only: a private anonymous mapping of `bytes` (a multiple of the huge page size), aligned
// to the huge page size and advised for huge pages, not yet touched; nullptr where huge pages
// are unavailable or the mapping fails. Its own mapping, not heap memory, so that the advice
// ends with it: advising part of the heap would leave later, unrelated allocations at the same
// addresses on huge pages. Release with UnmapHugePages(data, bytes).
void* MapHugePages(size_t bytes);
void UnmapHugePages(void* data, size_t bytes);

// Reports only (it reads /proc/self/smaps, which allocates): how many bytes of
// [data, data + bytes) are resident in huge pages now, from the AnonHugePages of the mappings
// that overlap the range (a mapping partly inside counts in proportion); data nullptr and bytes
// SIZE_MAX: the whole process. 0 where unknown.
size_t ResidentHugePageBytes(const void* data, size_t bytes);

}  // namespace staticlm
