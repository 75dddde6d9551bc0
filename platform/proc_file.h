// Reading a small procfs file without the heap: the process statistics (process_stats.h) and
// the CPU contention counters (cpu_contention.h) read /proc into stack buffers so that they may
// be called in a run phase.
#pragma once

#include <cstddef>

namespace staticlm {

// Reads up to `capacity - 1` bytes of the file at `path` (relative to the directory open as
// `dir_fd`, or absolute with AT_FDCWD) into `out`, NUL-terminated, retrying reads an interrupt
// cut short. False when the file cannot be opened or is empty. Never allocates.
bool ReadSmallFile(int dir_fd, const char* path, char* out, size_t capacity);

}  // namespace staticlm
