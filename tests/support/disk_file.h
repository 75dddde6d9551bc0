// Files on a disk file system, for tests that need a file's page cache (mapped file pages count
// as RssFile): created in the working directory (the build tree), since /tmp may be a tmpfs,
// whose pages are shared memory instead.
#pragma once

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

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

// A copy of `source` in the working directory, named for this process, written back to the
// disk (clean page cache pages), for a test whose pages no other process may share: the kernel
// leaves a file page that another process maps where it is (MADV_PAGEOUT), and ctest runs other
// tests that map the same model beside this one. Returns its path (the caller unlinks it), or ""
// with *skip_reason set.
inline std::string CopyToPrivateDiskFile(const char* source, const char** skip_reason) {
  const std::string path = "staticlm_private_" + std::to_string(getpid()) + ".bin";
  FILE* in = std::fopen(source, "rb");
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  struct statfs fs;
  bool ok = in != nullptr && fd >= 0 && fstatfs(fd, &fs) == 0 && fs.f_type != TMPFS_MAGIC;
  std::vector<char> chunk(1 << 20);
  while (ok) {
    const size_t n = std::fread(chunk.data(), 1, chunk.size(), in);
    if (n == 0) break;
    ok = write(fd, chunk.data(), n) == static_cast<ssize_t>(n);
  }
  ok = ok && std::ferror(in) == 0 && fdatasync(fd) == 0;
  if (in != nullptr) std::fclose(in);
  if (fd >= 0) close(fd);
  if (!ok) {
    unlink(path.c_str());
    *skip_reason = "cannot write a private copy to a disk file system in the working directory";
    return "";
  }
  return path;
}

}  // namespace staticlm::test
