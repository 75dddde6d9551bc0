// Paths for files a test writes. ctest runs each test case as its own process, several at
// once, so a fixed name would let one process rewrite a model file another has mapped (a
// SIGBUS): the process id makes every path private to its process.
#pragma once

#include <unistd.h>

#include <string>

#include <gtest/gtest.h>

namespace staticlm::test {

inline std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "staticlm_" + std::to_string(getpid()) + "_" + name;
}

}  // namespace staticlm::test
