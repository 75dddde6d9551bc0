// Options of `staticlm bench`, parsed from argv without exceptions.
#pragma once

#include <cstdint>
#include <vector>

#include "staticlm/staticlm.h"

namespace staticlm::cli {

struct BenchOptions {
  const char* model = nullptr;     // default: the repository's models/ file
  int32_t prompt_tokens = 128;     // synthetic prompt for time to first token and prefill speed
  int32_t gen_tokens = 64;         // decode steps timed at each depth
  std::vector<int32_t> depths{0};  // cache positions at which decode is measured
  int32_t reps = 3;                // measured repetitions of the whole measurement
  int32_t warmup = 1;              // unmeasured repetitions before them
  bool ctx_given = false;          // --ctx was given; otherwise ResolveBenchContext decides
  bool chunk_given = false;        // --chunk was given; otherwise the default, at most the ctx
  int64_t probe_mib = -1;          // bandwidth probe buffer; -1 = automatic, 0 = no probe
  const char* json_path = nullptr;
  const char* plot_path = nullptr;
  staticlm_limits limits;  // threads, ctx, chunk, kv, kernels, busy-wait, pinning
};

// Fills `options` from argv[first..argc). Returns false after printing a one-line error for an
// unknown flag, a missing or bad value.
bool ParseBenchOptions(int argc, char** argv, int first, BenchOptions* options);

// Cache positions the measurement needs: the prompt, and every depth plus its decode steps.
int64_t BenchTokensNeeded(const BenchOptions& options);

// Sets options->limits.max_context unless --ctx was given: at least 2048 and at least what the
// measurement needs, but no more than `model_context` (when > 0). Without --chunk, lowers the
// default prefill chunk to the context if it is longer. Returns false after printing
// a one-line error when the context (given or the model's) is too short for the measurement.
bool ResolveBenchContext(int32_t model_context, BenchOptions* options);

}  // namespace staticlm::cli
