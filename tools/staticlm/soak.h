// `staticlm soak`: a long generation in constant memory (a sliding-window cache), sampled every
// N tokens for resident memory, per-token latency and heap events, to show that a context that
// runs for hours stays as it was after its first minutes: RSS flat, no allocation, latency flat
// in position. scripts/soak runs it on each backend and keeps the figures in bench/results.
#pragma once

#include <cstdint>
#include <cstdio>
#include <vector>

#include "staticlm/staticlm.h"

namespace staticlm::cli {

struct SoakOptions {
  const char* model = nullptr;  // default: the repository's models/ file
  const char* prompt = "Once upon a time, in a small town by the sea,";
  int64_t tokens = 100000;  // generated tokens
  int32_t every = 1000;     // tokens per sample (interval)
  int64_t warmup = 1000;    // tokens before RSS must stay flat (allocators, driver caches settle)
  uint64_t seed = 1;
  const char* json_path = nullptr;
  const char* plot_path = nullptr;
  staticlm_limits limits;  // --window is required unless --ctx holds every token
};

// One interval of `every` tokens.
struct SoakSample {
  int64_t tokens = 0;  // generated so far, at the interval's end
  double p50_ms = 0, p99_ms = 0, max_ms = 0;
  uint64_t rss_bytes = 0;
  long long heap_events = -1;         // staticlm's, since the run phase began (-1: not counted)
  long long driver_heap_events = -1;  // the device driver's, the same way
};

struct SoakResult {
  const char* backend = "";
  int64_t window = 0;
  std::vector<SoakSample> samples;
  // RSS range over the samples past options.warmup tokens (the last sample if none is).
  uint64_t rss_min_after_warmup = 0, rss_max_after_warmup = 0;
  double seconds = 0;
};

// Parses argv[first..argc). False after printing one line for a bad or unknown flag.
bool ParseSoakOptions(int argc, char** argv, int first, SoakOptions* options);

void WriteSoakJson(FILE* out, const SoakOptions& options, const SoakResult& result);
void WriteSoakSvg(FILE* out, const SoakOptions& options, const SoakResult& result);

}  // namespace staticlm::cli
