// The measurement loop of `staticlm bench`: time to first token, prefill, and per-token decode
// latency at each depth, repeated. Uses only the C API and storage sized before it starts, so
// the loop itself allocates nothing (the CLI counts heap events around it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "platform/cpu_contention.h"
#include "staticlm/staticlm.h"

namespace staticlm::cli {

// What the measurement does. `tokens` holds at least max(prompt_tokens, deepest depth) ids.
struct BenchWorkload {
  const int32_t* tokens = nullptr;
  int32_t prompt_tokens = 0;
  int32_t gen_tokens = 0;
  const int32_t* depths = nullptr;
  size_t n_depths = 0;
  int32_t reps = 0;
  int32_t warmup = 0;
  bool op_profile = false;  // the context was created with limits.profile_ops (--op-profile)
};

// Rows kept per depth of an op profile: every op kind with every weight type a model has.
constexpr size_t kBenchOpRows = 48;

// The figures of one repetition, in seconds.
struct BenchRep {
  double prefill_s = 0;          // staticlm_prefill of the prompt
  double ttft_s = 0;             // the prefill plus sampling the first token
  double sync_s = 0;             // staticlm_sync_seconds over every timed decode step of this rep
  std::vector<double> decode_s;  // per depth: the sum of its step latencies
  // Per depth: what took the CPUs away while its decode steps ran (read just before the first
  // timed step and just after the last).
  std::vector<CpuContention> decode_contention;
};

// Everything measured; sized by AllocateBenchResults before the run phase starts.
struct BenchResults {
  std::vector<BenchRep> reps;
  // Per-step latency in seconds of staticlm_decode + greedy staticlm_sample, indexed
  // [(rep * n_depths + depth_index) * gen_tokens + step].
  std::vector<double> latency_s;
  // With op_profile: per depth, the timed decode steps' op profile summed over the recorded
  // repetitions, op_rows[depth * kBenchOpRows + row] for row < op_rows_used[depth], and after
  // the depths one more slot (index n_depths) for the prompt's prefills; scratch receives each
  // loop's rows.
  std::vector<staticlm_op_time> op_rows;
  std::vector<size_t> op_rows_used;
  std::vector<staticlm_op_time> op_scratch;
  double LatencyAt(const BenchWorkload& w, int32_t rep, size_t depth_index, int32_t step) const {
    return latency_s[(static_cast<size_t>(rep) * w.n_depths + depth_index) *
                         static_cast<size_t>(w.gen_tokens) +
                     static_cast<size_t>(step)];
  }
};

// Init phase: sizes `results` for `workload` (allocates).
void AllocateBenchResults(const BenchWorkload& workload, BenchResults* results);

// Run phase: `warmup` unrecorded repetitions, then `reps` recorded ones. Never allocates.
// Returns the first failing status (the context's last error says why).
staticlm_status RunBench(staticlm_context* ctx, const BenchWorkload& workload,
                         BenchResults* results);

}  // namespace staticlm::cli
