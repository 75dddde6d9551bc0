#include "platform/memory_lock.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace staticlm {

bool PrefaultAndLock(const void* data, size_t bytes, const char** why) {
  *why = "";
  if (data == nullptr || bytes == 0) return true;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const volatile uint8_t* p = static_cast<const volatile uint8_t*>(data);
  uint8_t sink = 0;
  for (size_t offset = 0; offset < bytes; offset += page) sink ^= p[offset];
  sink ^= p[bytes - 1];
  (void)sink;
  // mlock wants page-aligned ranges: widen to the pages the range touches.
  uintptr_t begin = reinterpret_cast<uintptr_t>(data) / page * page;
  uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes + page - 1) / page * page;
  if (mlock(reinterpret_cast<const void*>(begin), end - begin) == 0) return true;
  switch (errno) {
    case EPERM:
      *why = "mlock not permitted (needs CAP_IPC_LOCK or a larger RLIMIT_MEMLOCK)";
      break;
    case ENOMEM:
      *why = "mlock refused: over the locked-memory limit (ulimit -l)";
      break;
    case EAGAIN:
      *why = "mlock refused: the pages could not be locked (EAGAIN)";
      break;
    default:
      *why = "mlock failed";
      break;
  }
  return false;
}

}  // namespace staticlm
