#include "platform/page_out.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

namespace staticlm {

bool PageOut(const void* data, size_t bytes) {
#if defined(MADV_PAGEOUT)
  const long page_size = sysconf(_SC_PAGESIZE);
  if (page_size <= 0 || data == nullptr) return false;
  const uintptr_t page = static_cast<uintptr_t>(page_size);
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data);
  // Only whole pages: a partial page at either end may hold bytes someone still reads.
  const uintptr_t first = (begin + page - 1) / page * page;
  const uintptr_t end = (begin + bytes) / page * page;
  if (end <= first) return true;  // no whole page: nothing to give back
  return madvise(reinterpret_cast<void*>(first), end - first, MADV_PAGEOUT) == 0;
#else
  (void)data;
  (void)bytes;
  return false;
#endif
}

}  // namespace staticlm
