#include "platform/cpu_contention.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "platform/proc_file.h"

namespace staticlm {
namespace {

// Parses a decimal number at *p and moves *p past it and the spaces after it.
bool ParseNumber(const char** p, unsigned long long* value) {
  if (**p < '0' || **p > '9') return false;
  unsigned long long v = 0;
  for (; **p >= '0' && **p <= '9'; ++*p) v = v * 10 + static_cast<unsigned>(**p - '0');
  while (**p == ' ') ++*p;
  *value = v;
  return true;
}

// The 8th number of /proc/stat's first line, "cpu  user nice system idle iowait irq softirq
// steal ...", in seconds; -1 when absent.
double ReadStealSeconds() {
  char text[512];  // the first line is under 100 bytes
  if (!ReadSmallFile(AT_FDCWD, "/proc/stat", text, sizeof(text))) return -1;
  if (std::strncmp(text, "cpu ", 4) != 0) return -1;
  const char* p = text + 4;
  while (*p == ' ') ++p;
  unsigned long long field = 0;
  for (int i = 0; i < 8; ++i) {
    if (!ParseNumber(&p, &field)) return -1;
  }
  const long ticks_per_s = sysconf(_SC_CLK_TCK);
  return ticks_per_s > 0 ? static_cast<double>(field) / static_cast<double>(ticks_per_s) : -1;
}

// The second number of a thread's schedstat, "run_ns wait_ns timeslices", in seconds.
bool ReadThreadRunDelay(int task_dir, const char* tid, double* seconds) {
  char path[64];
  std::snprintf(path, sizeof(path), "%s/schedstat", tid);
  char text[128];
  if (!ReadSmallFile(task_dir, path, text, sizeof(text))) return false;
  const char* p = text;
  unsigned long long run_ns = 0, wait_ns = 0;
  if (!ParseNumber(&p, &run_ns) || !ParseNumber(&p, &wait_ns)) return false;
  *seconds = static_cast<double>(wait_ns) * 1e-9;
  return true;
}

// What getdents64 writes: the kernel's linux_dirent64.
struct DirEntry64 {
  uint64_t ino;
  int64_t off;
  unsigned short reclen;
  unsigned char type;
  char name[1];
};

// The run delay of every thread of this process, summed; -1 when schedstats are unavailable.
double ReadRunDelaySeconds() {
  const int task_dir = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (task_dir < 0) return -1;
  alignas(8) char entries[4096];
  double total = 0;
  bool any = false;
  bool ok = true;
  for (;;) {
    const long n = syscall(SYS_getdents64, task_dir, entries, sizeof(entries));
    if (n <= 0) {
      ok = n == 0;
      break;
    }
    for (long at = 0; at < n;) {
      const auto* e = reinterpret_cast<const DirEntry64*>(entries + at);
      at += e->reclen;
      if (e->name[0] < '0' || e->name[0] > '9') continue;  // "." and ".."
      double seconds = 0;
      // A thread that ended between the listing and the read is simply not counted.
      if (ReadThreadRunDelay(task_dir, e->name, &seconds)) {
        total += seconds;
        any = true;
      }
    }
  }
  close(task_dir);
  return ok && any ? total : -1;
}

long long ReadInvoluntarySwitches() {
  rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) != 0) return -1;
  return usage.ru_nivcsw;
}

double DifferenceOf(double before, double after) {
  return before < 0 || after < 0 ? -1 : after - before;
}

}  // namespace

CpuContention ReadCpuContention() {
  CpuContention c;
  c.steal_s = ReadStealSeconds();
  c.run_delay_s = ReadRunDelaySeconds();
  c.involuntary_switches = ReadInvoluntarySwitches();
  return c;
}

CpuContention CpuContentionBetween(const CpuContention& before, const CpuContention& after) {
  CpuContention d;
  d.steal_s = DifferenceOf(before.steal_s, after.steal_s);
  d.run_delay_s = DifferenceOf(before.run_delay_s, after.run_delay_s);
  d.involuntary_switches = before.involuntary_switches < 0 || after.involuntary_switches < 0
                               ? -1
                               : after.involuntary_switches - before.involuntary_switches;
  return d;
}

}  // namespace staticlm
