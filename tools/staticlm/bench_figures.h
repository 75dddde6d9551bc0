// The figures `staticlm bench` reports, derived from the raw measurements after the run phase:
// medians and bests over repetitions, latency distributions, and the memory-bandwidth bound.
#pragma once

#include <cstdint>
#include <vector>

#include "platform/bandwidth_probe.h"
#include "staticlm/staticlm.h"
#include "tools/staticlm/bench_machine.h"
#include "tools/staticlm/bench_options.h"
#include "tools/staticlm/bench_runner.h"
#include "tools/staticlm/bench_stats.h"

namespace staticlm::cli {

// What the CLI observed around the measurement, besides the measurement itself.
struct BenchContextFacts {
  const char* model = "";
  const char* backend = "";
  MachineInfo machine;
  NoiseProbe noise_before, noise_after;
  bool bandwidth_measured = false;
  BandwidthProbeResult bandwidth;
  double init_s = 0;
  uint64_t peak_rss_bytes = 0;
  // Transparent huge pages: the system's mode, its page size (0: none usable) and the bytes of
  // the process on huge pages after the run (the buffers staticlm asked them for, and any the
  // kernel gave in "always" mode).
  bool huge_pages_asked = false;  // limits.huge_pages
  const char* huge_page_mode = "";
  uint64_t huge_page_bytes = 0;
  uint64_t resident_huge_bytes = 0;
  uint64_t planned_bytes = 0;
  long long heap_events = -1;            // staticlm's; -1: unavailable (sanitizer build)
  long long driver_heap_events = -1;     // inside the device driver (heap_counts.h)
  std::vector<uint64_t> bytes_per_step;  // per depth: staticlm_step_cost_get(ctx, 1, depth)
  uint64_t bytes_per_step_depth0 = 0;
};

struct DepthFigures {
  int32_t depth = 0;
  double decode_tps_median = 0;
  double decode_tps_best = 0;
  Summary latency_ms;  // every timed step at this depth, all repetitions
  uint64_t bytes_per_step = 0;
  double implied_bytes_per_s = 0;  // bytes_per_step × decode_tps_median
  double bound_tps = 0;            // read bandwidth / bytes_per_step; NaN without the probe
  double percent_of_bound = 0;     // decode_tps_median / bound_tps × 100
  // The steps slower than kSlowStepFactor × p50 (those that make p99 exceed it): how many, and
  // the time they spent above p50, summed over the repetitions.
  int slow_steps = 0;
  double slow_excess_ms = 0;
  // What took the CPUs away while the timed steps ran, summed over the repetitions (NaN / -1
  // where the system does not say): the host's steal time over all CPUs, this process's waits
  // for a CPU of the guest, and its involuntary context switches.
  double steal_ms = 0;
  double run_delay_ms = 0;
  long long involuntary_switches = 0;
};

// A decode step slower than this multiple of the median is a slow step (issue 16's p99 target).
constexpr double kSlowStepFactor = 1.10;

// Per repetition, in the units reported.
struct RepFigures {
  double ttft_ms = 0;
  double prefill_tps = 0;
  double sync_ms_per_token = 0;
  std::vector<double> decode_tps;  // per depth
};

struct BenchFigures {
  double init_ms = 0;
  double ttft_ms_median = 0, ttft_ms_best = 0;
  double prefill_tps_median = 0, prefill_tps_best = 0;
  double sync_ms_per_token_median = 0;
  Summary latency_ms;  // every timed step of every depth and repetition
  std::vector<DepthFigures> depths;
  std::vector<RepFigures> reps;
  double bound_tps_depth0 = 0;         // read bandwidth / bytes per decode step at depth 0
  double percent_of_bound_depth0 = 0;  // NaN unless depth 0 was measured
};

// Allocates; call after the run phase.
BenchFigures ComputeBenchFigures(const BenchWorkload& workload, const BenchResults& results,
                                 const BenchContextFacts& facts);

}  // namespace staticlm::cli
