// What took the CPUs away from a measurement, for telling a slow step that staticlm caused from
// one the machine caused: the hypervisor's steal time (a vCPU was runnable but the host ran
// something else on its core) and the time this process's threads waited on the guest's own
// run queues (another task of the guest had the CPU). Reported by `staticlm bench` beside the
// latency percentiles; never used to decide anything at run time.
//
// Linux only (procfs); elsewhere every field reads as unknown. The reads use open/read/getdents
// into stack buffers: no heap, bounded work, so a run phase may call them.
#pragma once

#include <cstdint>

namespace staticlm {

struct CpuContention {
  // Steal time summed over every CPU of the machine since boot (/proc/stat, clock ticks of
  // 1 / sysconf(_SC_CLK_TCK) s, so a difference is exact to ±1 tick per CPU); -1 if unknown.
  double steal_s = -1;
  // Time this process's threads spent runnable but waiting for a CPU of the guest, summed over
  // its threads (/proc/self/task/*/schedstat, nanoseconds); -1 if unknown (no schedstats).
  double run_delay_s = -1;
  // Times a thread of this process was switched out while it could still run
  // (getrusage(RUSAGE_SELF).ru_nivcsw); -1 if unknown.
  long long involuntary_switches = -1;
};

// The counters now.
CpuContention ReadCpuContention();

// after - before, field by field; a field unknown in either is unknown (-1).
CpuContention CpuContentionBetween(const CpuContention& before, const CpuContention& after);

}  // namespace staticlm
