#include "platform/proc_file.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

namespace staticlm {

bool ReadSmallFile(int dir_fd, const char* path, char* out, size_t capacity) {
  int fd;
  do {
    fd = openat(dir_fd, path, O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return false;
  size_t used = 0;
  while (used + 1 < capacity) {
    const ssize_t n = read(fd, out + used, capacity - 1 - used);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    used += static_cast<size_t>(n);
  }
  close(fd);
  out[used] = '\0';
  return used > 0;
}

}  // namespace staticlm
