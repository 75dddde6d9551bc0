#include "tools/staticlm/bench_figures.h"

#include <limits>

namespace staticlm::cli {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double Best(const std::vector<double>& v, bool highest) {
  double best = v.empty() ? kNaN : v[0];
  for (double x : v) best = highest ? (x > best ? x : best) : (x < best ? x : best);
  return best;
}

double MedianOf(std::vector<double> v) {
  return Median(v.data(), v.size());
}

std::vector<RepFigures> PerRep(const BenchWorkload& w, const BenchResults& r) {
  std::vector<RepFigures> reps;
  const double steps = static_cast<double>(w.gen_tokens) * static_cast<double>(w.n_depths);
  for (const BenchRep& rep : r.reps) {
    RepFigures f;
    f.ttft_ms = rep.ttft_s * 1e3;
    f.prefill_tps = rep.prefill_s > 0 ? w.prompt_tokens / rep.prefill_s : kNaN;
    f.sync_ms_per_token = steps > 0 ? rep.sync_s * 1e3 / steps : kNaN;
    for (double s : rep.decode_s) f.decode_tps.push_back(s > 0 ? w.gen_tokens / s : kNaN);
    reps.push_back(f);
  }
  return reps;
}

Summary LatencySummary(const BenchWorkload& w, const BenchResults& r, size_t only_depth,
                       bool all_depths) {
  std::vector<double> ms;
  for (int32_t rep = 0; rep < w.reps; ++rep) {
    for (size_t d = 0; d < w.n_depths; ++d) {
      if (!all_depths && d != only_depth) continue;
      for (int32_t i = 0; i < w.gen_tokens; ++i) ms.push_back(r.LatencyAt(w, rep, d, i) * 1e3);
    }
  }
  return Summarize(ms.data(), ms.size());
}

// The steps at depth index `d` slower than kSlowStepFactor × p50, and their time above p50.
void CountSlowSteps(const BenchWorkload& w, const BenchResults& r, size_t d, DepthFigures* df) {
  const double p50 = df->latency_ms.p50;
  for (int32_t rep = 0; rep < w.reps; ++rep) {
    for (int32_t i = 0; i < w.gen_tokens; ++i) {
      const double ms = r.LatencyAt(w, rep, d, i) * 1e3;
      if (ms <= kSlowStepFactor * p50) continue;
      ++df->slow_steps;
      df->slow_excess_ms += ms - p50;
    }
  }
}

// The contention of depth index `d`'s timed steps, summed over the repetitions.
void SumContention(const BenchResults& r, size_t d, DepthFigures* df) {
  for (const BenchRep& rep : r.reps) {
    const CpuContention& c = rep.decode_contention[d];
    df->steal_ms += c.steal_s >= 0 ? c.steal_s * 1e3 : kNaN;
    df->run_delay_ms += c.run_delay_s >= 0 ? c.run_delay_s * 1e3 : kNaN;
    if (c.involuntary_switches < 0 || df->involuntary_switches < 0) {
      df->involuntary_switches = -1;
    } else {
      df->involuntary_switches += c.involuntary_switches;
    }
  }
}

double BoundTps(const BenchContextFacts& facts, uint64_t bytes_per_step) {
  if (!facts.bandwidth_measured || bytes_per_step == 0) return kNaN;
  return facts.bandwidth.bytes_per_s / static_cast<double>(bytes_per_step);
}

}  // namespace

BenchFigures ComputeBenchFigures(const BenchWorkload& w, const BenchResults& r,
                                 const BenchContextFacts& facts) {
  BenchFigures f;
  f.init_ms = facts.init_s * 1e3;
  f.reps = PerRep(w, r);
  std::vector<double> ttft, prefill, sync;
  for (const RepFigures& rep : f.reps) {
    ttft.push_back(rep.ttft_ms);
    prefill.push_back(rep.prefill_tps);
    sync.push_back(rep.sync_ms_per_token);
  }
  f.ttft_ms_median = MedianOf(ttft);
  f.ttft_ms_best = Best(ttft, false);
  f.prefill_tps_median = MedianOf(prefill);
  f.prefill_tps_best = Best(prefill, true);
  f.sync_ms_per_token_median = MedianOf(sync);
  f.latency_ms = LatencySummary(w, r, 0, true);

  f.bound_tps_depth0 = BoundTps(facts, facts.bytes_per_step_depth0);
  f.percent_of_bound_depth0 = kNaN;
  for (size_t d = 0; d < w.n_depths; ++d) {
    std::vector<double> tps;
    for (const RepFigures& rep : f.reps) tps.push_back(rep.decode_tps[d]);
    DepthFigures df;
    df.depth = w.depths[d];
    df.decode_tps_median = MedianOf(tps);
    df.decode_tps_best = Best(tps, true);
    df.latency_ms = LatencySummary(w, r, d, false);
    df.bytes_per_step = facts.bytes_per_step[d];
    df.implied_bytes_per_s = static_cast<double>(df.bytes_per_step) * df.decode_tps_median;
    df.bound_tps = BoundTps(facts, df.bytes_per_step);
    df.percent_of_bound = df.decode_tps_median / df.bound_tps * 100.0;
    if (df.depth == 0) f.percent_of_bound_depth0 = df.percent_of_bound;
    CountSlowSteps(w, r, d, &df);
    SumContention(r, d, &df);
    f.depths.push_back(df);
  }
  return f;
}

}  // namespace staticlm::cli
