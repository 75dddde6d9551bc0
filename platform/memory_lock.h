// Pre-faulting and locking memory in RAM, for benchmarks that want no page faults and no
// paging during the run (staticlm --lock). Init only.
#pragma once

#include <cstddef>

namespace staticlm {

// Touches every page of [data, data + bytes) so that it is resident, then mlock()s it. Returns
// true when locked; false with a static reason in *why when the system does not allow it (the
// pages are still pre-faulted). Pages of a read-only file mapping are read, never written.
bool PrefaultAndLock(const void* data, size_t bytes, const char** why);

}  // namespace staticlm
