// An unlinked file on a disk file system, for tests that need a file's page cache (mapped file
// pages count as RssFile): created in the working directory (the build tree), since /tmp may be
// a tmpfs, whose pages are shared memory instead.
#pragma once

#include <linux/magic.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cstdlib>

namespace staticlm::test {

// The descriptor of a new, already unlinked file, or -1 with *skip_reason set when the working
// directory cannot hold one or is a tmpfs. The caller closes it.
inline int OpenUnlinkedDiskFile(const char** skip_reason) {
  char path[] = "staticlm_disk_file_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) {
    *skip_reason = "cannot create a file in the working directory";
    return -1;
  }
  unlink(path);
  struct statfs fs;
  if (fstatfs(fd, &fs) != 0 || fs.f_type == TMPFS_MAGIC) {
    close(fd);
    *skip_reason = "the working directory is a tmpfs";
    return -1;
  }
  return fd;
}

}  // namespace staticlm::test
