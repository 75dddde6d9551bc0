// Paths for files a test writes. ctest runs each test case as its own process, several at
// once, so a fixed name would let one process rewrite a model file another has mapped (a
// SIGBUS): every path is inside a directory private to the process, TempDir()/staticlm_<pid>/.
// That directory and everything in it is removed when the process exits normally, so a test
// run leaves nothing behind (scripts/test fails a test stage that leaves any file in TMPDIR).
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

#include <gtest/gtest.h>

namespace staticlm::test {

// The process's directory, made on first use. Only the process that made it removes it: a
// forked child that exits (a death test) runs the same static destructors.
inline const std::string& ProcessTempDir() {
  struct Dir {
    pid_t owner = getpid();
    std::string path = ::testing::TempDir() + "staticlm_" + std::to_string(owner);
    Dir() { mkdir(path.c_str(), 0700); }
    ~Dir() {
      std::error_code ignored;
      if (getpid() == owner) std::filesystem::remove_all(path, ignored);
    }
  };
  static const Dir dir;
  return dir.path;
}

inline std::string TempPath(const std::string& name) {
  return ProcessTempDir() + "/" + name;
}

}  // namespace staticlm::test
