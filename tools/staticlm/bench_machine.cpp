#include "tools/staticlm/bench_machine.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "platform/bandwidth_probe.h"
#include "platform/clock.h"
#include "tools/staticlm/bench_stats.h"

namespace staticlm::cli {
namespace {

// The value of the first "model name : ..." line, trimmed.
void ReadCpuModel(char* out, size_t capacity) {
  FILE* f = std::fopen("/proc/cpuinfo", "r");
  if (f == nullptr) return;
  char line[512];
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::strncmp(line, "model name", 10) != 0) continue;
    const char* colon = std::strchr(line, ':');
    if (colon == nullptr) continue;
    const char* value = colon + 1;
    while (*value == ' ' || *value == '\t') ++value;
    size_t n = std::strcspn(value, "\n");
    if (n >= capacity) n = capacity - 1;
    std::memcpy(out, value, n);
    out[n] = '\0';
    break;
  }
  std::fclose(f);
}

// A dependent chain of xorshift steps: pure ALU work that no cache or memory speed affects.
uint64_t SpinWork(uint64_t x) {
  for (int i = 0; i < 150000; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  return x;
}

}  // namespace

MachineInfo ReadMachineInfo() {
  MachineInfo info;
  ReadCpuModel(info.cpu, sizeof(info.cpu));
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  info.cores = cores > 0 ? static_cast<int>(cores) : 0;
  double load[1];
  if (getloadavg(load, 1) == 1) info.load_average_1m = load[0];
  info.llc_bytes = LastLevelCacheBytes();
  return info;
}

NoiseProbe RunNoiseProbe() {
  double samples_us[kNoiseSamples];
  volatile uint64_t seed = 0x2545F4914F6CDD1Dull;  // volatile: the work cannot be hoisted out
  for (double& us : samples_us) {
    double start = NowSeconds();
    seed = SpinWork(seed);
    us = (NowSeconds() - start) * 1e6;
  }
  Summary s = Summarize(samples_us, kNoiseSamples);
  NoiseProbe probe;
  probe.min_us = s.min;
  probe.median_us = s.p50;
  probe.max_us = s.max;
  probe.spread = s.min > 0 ? s.max / s.min : 0;
  return probe;
}

}  // namespace staticlm::cli
