// A read-bandwidth probe: how fast this machine streams memory that is not in any cache. A
// decode step of a small model reads every weight once, so this is the ceiling its speed is
// compared against (tokens/s ≤ bandwidth / bytes read per step).
//
// Init-time tools only: they allocate a large buffer and create threads. Not for the run phase.
#pragma once

#include <cstddef>
#include <cstdint>

#include "platform/status.h"

namespace staticlm {

struct BandwidthProbeOptions {
  uint64_t buffer_bytes = uint64_t{256} << 20;  // should be several times the last-level cache
  int threads = 1;                              // each streams its own contiguous slice
  int passes = 5;                               // the best pass is reported
  // The buffer on transparent huge pages where the system allows (platform/huge_pages.h), as
  // staticlm's own buffers are by default, so that the probe stays a ceiling for a decode step
  // that streams huge pages.
  bool huge_pages = true;
};

// How many read loops the probe may time (platform/bandwidth_probe.cpp lists them).
constexpr int kMaxReadLoops = 4;

struct BandwidthProbeResult {
  // The best pass of the fastest loop: buffer bytes / (last thread done − first thread started).
  double bytes_per_s = 0;
  // Which loop that was (a string literal, so also valid in MeasureReadBandwidthInChild's
  // parent, a fork of the same binary): "plain", "4 streams", "4 streams avx2" or
  // "4 streams avx512" — a plain loop is not the ceiling on every machine.
  const char* loop = "";
  // Every loop that ran, in the order timed, with its best pass's rate.
  int n_loops = 0;
  const char* loop_names[kMaxReadLoops] = {"", "", "", ""};
  double loop_bytes_per_s[kMaxReadLoops] = {0, 0, 0, 0};
  uint64_t buffer_bytes = 0;
  int threads = 0;
  int passes = 0;
  bool huge_pages = false;  // the buffer was a huge-page mapping (AlignedBuffer::on_huge_pages)
};

// Allocates the buffer, has every thread write its slice (so the pages exist), then, for each
// read loop this CPU can run, times `passes` passes in which all threads start together and read
// their slice once with that loop.
Status MeasureReadBandwidth(const BandwidthProbeOptions& options, BandwidthProbeResult* result);

// The sum of words[0..n) as each read loop this CPU can run computes it, with its name, at
// most kMaxReadLoops; returns how many loops ran. Equal sums mean that every loop reads every
// word once (a loop that skipped words would report a rate it never read at). For tests.
int SumWithEveryReadLoop(const uint64_t* words, size_t n, uint64_t sums[kMaxReadLoops],
                         const char* names[kMaxReadLoops]);

// MeasureReadBandwidth in a forked child process, so that the probe's buffer never counts
// toward this process's peak RSS. Call it before this process creates any thread (a child of
// a multithreaded process may not safely allocate).
Status MeasureReadBandwidthInChild(const BandwidthProbeOptions& options,
                                   BandwidthProbeResult* result);

// The size of the largest CPU cache of cpu0 in bytes (from Linux sysfs), or 0 if unknown.
uint64_t LastLevelCacheBytes();

}  // namespace staticlm
