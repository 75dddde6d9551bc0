// What `staticlm bench` records about the machine it ran on, and a noise probe that tells a
// quiet machine from a busy one.
#pragma once

#include <cstdint>

namespace staticlm::cli {

struct MachineInfo {
  char cpu[128] = "unknown";    // "model name" of /proc/cpuinfo
  int cores = 0;                // online logical CPUs
  double load_average_1m = -1;  // at the time of the call; -1 if unknown
  uint64_t llc_bytes = 0;       // largest cache of cpu0; 0 if unknown
};

// Reads /proc/cpuinfo, sysconf and sysfs. May allocate (stdio).
MachineInfo ReadMachineInfo();

// A fixed, small CPU-bound loop (about half a millisecond) timed `kNoiseSamples` times. On a
// quiet machine every sample takes about as long; a spread (max / min) well above 1 says that
// something else competed for the core. Never allocates.
constexpr int kNoiseSamples = 20;

struct NoiseProbe {
  double min_us = 0;
  double median_us = 0;
  double max_us = 0;
  double spread = 0;  // max / min
};

NoiseProbe RunNoiseProbe();

}  // namespace staticlm::cli
