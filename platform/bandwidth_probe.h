// A read-bandwidth probe: how fast this machine streams memory that is not in any cache. A
// decode step of a small model reads every weight once, so this is the ceiling its speed is
// compared against (tokens/s ≤ bandwidth / bytes read per step).
//
// Init-time tools only: they allocate a large buffer and create threads. Not for the run phase.
#pragma once

#include <cstdint>

#include "platform/status.h"

namespace staticlm {

struct BandwidthProbeOptions {
  uint64_t buffer_bytes = uint64_t{256} << 20;  // should be several times the last-level cache
  int threads = 1;                              // each streams its own contiguous slice
  int passes = 5;                               // the best pass is reported
};

struct BandwidthProbeResult {
  double bytes_per_s = 0;  // best pass: buffer bytes / (last thread done − first thread started)
  uint64_t buffer_bytes = 0;
  int threads = 0;
  int passes = 0;
};

// Allocates the buffer, has every thread write its slice (so the pages exist), then times
// `passes` passes in which all threads start together and read their slice once.
Status MeasureReadBandwidth(const BandwidthProbeOptions& options, BandwidthProbeResult* result);

// MeasureReadBandwidth in a forked child process, so that the probe's buffer never counts
// toward this process's peak RSS. Call it before this process creates any thread (a child of
// a multithreaded process may not safely allocate).
Status MeasureReadBandwidthInChild(const BandwidthProbeOptions& options,
                                   BandwidthProbeResult* result);

// The size of the largest CPU cache of cpu0 in bytes (from Linux sysfs), or 0 if unknown.
uint64_t LastLevelCacheBytes();

}  // namespace staticlm
