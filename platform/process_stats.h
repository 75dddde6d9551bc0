// Process statistics from /proc/self/status, for checking that the process's measured memory
// agrees with the planned memory map.
//
// Both calls read the file with open/read into a stack buffer: no heap, so they may be called
// at the end of a run phase (they do a small, bounded read of a procfs file). Both return 0
// where the value is unavailable (not Linux, no procfs, an unexpected format).
#pragma once

#include <cstdint>

namespace staticlm {

// The process's peak resident set size (VmHWM), in bytes.
uint64_t PeakRssBytes();

// The process's current resident set size (VmRSS), in bytes.
uint64_t CurrentRssBytes();

// The part of the current resident set that no file backs (RssAnon + RssShmem), in bytes: the
// heap, anonymous mappings and shared memory such as a memfd. Unlike VmRSS it does not move
// when the kernel drops or brings back pages of a mapped model file, so it measures what a
// piece of code allocated, not which file pages happen to be resident.
uint64_t NonFileRssBytes();

}  // namespace staticlm
