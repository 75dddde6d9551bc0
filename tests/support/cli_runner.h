// Runs the built staticlm command (STATICLM_CLI) in a shell for end-to-end tests, capturing its
// output and how it ended.
#pragma once

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

namespace staticlm::test {

struct CliResult {
  int exit_code = -1;
  bool signaled = false;
  std::string output;  // stdout and stderr together
};

// Runs `command` with sh, stderr merged into the captured output.
inline CliResult RunShell(const std::string& command) {
  CliResult r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) r.output.append(buffer, n);
  int status = pclose(pipe);
  r.signaled = WIFSIGNALED(status);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// `staticlm ARGS` with no input and a 120 s limit (timeout's exit status is 124).
inline CliResult RunCli(const std::string& args) {
  return RunShell("timeout 120 " STATICLM_CLI " " + args + " </dev/null");
}

// A failure: non-zero exit (not a signal, not timeout's 124) and exactly one line of output
// that starts with "staticlm:" and contains `expected`.
inline void ExpectCleanFailure(const std::string& args, const std::string& expected) {
  CliResult r = RunCli(args);
  EXPECT_FALSE(r.signaled) << args;
  EXPECT_NE(r.exit_code, 0) << args;
  EXPECT_NE(r.exit_code, 124) << args << ": timed out";
  EXPECT_EQ(r.output.rfind("staticlm: ", 0), 0u) << args << "\n" << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << args << "\n" << r.output;
  EXPECT_NE(r.output.find(expected), std::string::npos)
      << args << ": expected '" << expected << "' in: " << r.output;
}

}  // namespace staticlm::test
