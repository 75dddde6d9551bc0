// --lock: buffers are pre-faulted and mlock()ed at init, and where the system refuses, the run
// goes on with a one-line note saying why.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "platform/memory_lock.h"
#include "tests/support/cli_runner.h"

namespace staticlm {
namespace {

using test::CliResult;
using test::RunCli;
using test::RunShell;

// Locked kilobytes of this process, from /proc/self/status.
long LockedKib() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  long kib = -1;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::strncmp(line, "VmLck:", 6) == 0) kib = std::strtol(line + 6, nullptr, 10);
  }
  std::fclose(f);
  return kib;
}

// AddressSanitizer intercepts mlock and munlock and makes them succeed without locking
// anything, so what these tests observe (VmLck, the refusal note) is not there to see.
#ifdef STATICLM_SANITIZE
#define SKIP_UNDER_ASAN() GTEST_SKIP() << "ASan's mlock interceptor locks nothing"
#else
#define SKIP_UNDER_ASAN() (void)0
#endif

TEST(MemoryLockTest, LocksWhenAllowedOrSaysWhy) {
  SKIP_UNDER_ASAN();
  std::vector<uint8_t> buffer(size_t{4} << 20, 1);
  const long before = LockedKib();
  const char* why = nullptr;
  bool locked = PrefaultAndLock(buffer.data(), buffer.size(), &why);
  ASSERT_NE(why, nullptr);
  if (locked) {
    EXPECT_STREQ(why, "");
    EXPECT_GE(LockedKib() - before, 4 * 1024L);
    munlock(buffer.data(), buffer.size());
  } else {
    EXPECT_GT(std::strlen(why), 10u) << "a refusal must say why";
  }
}

TEST(MemoryLockTest, EmptyRangeIsTriviallyLocked) {
  const char* why = nullptr;
  EXPECT_TRUE(PrefaultAndLock(nullptr, 0, &why));
}

TEST(MemoryLockTest, CliRunsWithANoteWhenLockingIsRefused) {
  SKIP_UNDER_ASAN();
  if (geteuid() != 0) GTEST_SKIP() << "needs root to drop to an unprivileged user";
  if (RunShell("command -v setpriv >/dev/null").exit_code != 0) GTEST_SKIP() << "no setpriv";
  std::string model = STATICLM_DEFAULT_MODEL;
  if (RunShell("setpriv --reuid 65534 --regid 65534 --clear-groups test -r " + model).exit_code !=
      0) {
    GTEST_SKIP() << "the model is not readable by an unprivileged user";
  }
  // An unprivileged user with a 64 KiB locked-memory limit cannot lock 140 MiB.
  CliResult r = RunShell("ulimit -l 64; setpriv --reuid 65534 --regid 65534 --clear-groups " +
                         std::string(STATICLM_CLI) + " run --lock --max-tokens 2 --temperature 0");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("note: memory not locked: mlock refused"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(" heap_allocs_after_init=0 "), std::string::npos) << r.output;
}

TEST(MemoryLockTest, CliLocksAsRoot) {
  if (geteuid() != 0) GTEST_SKIP() << "locking 140 MiB needs CAP_IPC_LOCK";
  CliResult r = RunCli("run --lock --max-tokens 2 --temperature 0");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("not locked"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace staticlm
