// The readable table `staticlm bench` prints.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tools/staticlm/bench_report.h"
#include "tools/staticlm/flag_values.h"

namespace staticlm::cli {
namespace {

constexpr double kMiB = 1048576.0;

void PrintHeader(FILE* out, const BenchReport& r) {
  const BenchOptions& o = *r.options;
  const BenchContextFacts& facts = *r.facts;
  std::fprintf(out, "staticlm bench %s\n", staticlm_version());
  std::fprintf(out, "  model     %s\n", facts.model);
  std::fprintf(out, "  machine   %s, %d cores, LLC %.0f MiB, load %.2f\n", facts.machine.cpu,
               facts.machine.cores, facts.machine.llc_bytes / kMiB, facts.machine.load_average_1m);
  std::fprintf(out, "  backend   %s\n", facts.backend);
  std::fprintf(out, "  config    prompt %d, gen %d, depths", o.prompt_tokens, o.gen_tokens);
  for (size_t i = 0; i < o.depths.size(); ++i)
    std::fprintf(out, "%s%d", i ? "," : " ", o.depths[i]);
  std::fprintf(
      out, ", reps %d (+%d warm-up), threads %d, ctx %d, chunk %d, kv %s, isa %s%s%s%s%s\n\n",
      o.reps, o.warmup, o.limits.threads, o.limits.max_context, o.limits.prefill_chunk,
      KvName(o.limits.kv_type), o.limits.isa != nullptr ? o.limits.isa : "auto",
      o.limits.reference_kernels ? ", reference" : "", o.limits.busy_wait ? ", busy-wait" : "",
      o.limits.pin_threads ? ", pinned" : "", o.limits.lock_memory ? ", locked" : "");
}

void PrintFirstToken(FILE* out, const BenchFigures& f) {
  std::fprintf(out, "%-22s %10s %10s\n", "", "median", "best");
  std::fprintf(out, "%-22s %10.1f %10s  ms\n", "init", f.init_ms, "");
  std::fprintf(out, "%-22s %10.1f %10.1f  ms\n", "time to first token", f.ttft_ms_median,
               f.ttft_ms_best);
  std::fprintf(out, "%-22s %10.1f %10.1f  tok/s\n", "prefill", f.prefill_tps_median,
               f.prefill_tps_best);
  std::fprintf(out, "%-22s %10.3f %10s  ms/token\n\n", "sync (waiting)", f.sync_ms_per_token_median,
               "");
}

void PrintLatencyRow(FILE* out, const char* label, const Summary& s) {
  std::fprintf(out, "  %-8s %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f\n", label, s.min, s.p50, s.p90,
               s.p99, s.max, s.stdev);
}

// Per depth: the time the slow steps lost beside what the machine took from the CPUs while the
// steps ran (host steal: the hypervisor ran something else on a vCPU, all CPUs summed; CPU wait:
// this process's threads were runnable but another task of the guest had the CPU).
void PrintSlowSteps(FILE* out, const BenchFigures& f) {
  std::fprintf(out,
               "slow steps  (> %.2f x p50)   ms above p50   host steal ms   CPU wait ms   "
               "involuntary switches\n",
               kSlowStepFactor);
  for (const DepthFigures& d : f.depths) {
    char label[24];
    std::snprintf(label, sizeof(label), "d=%d", d.depth);
    std::fprintf(out, "  %-8s %16d %14.1f %15.1f %13.1f %22lld\n", label, d.slow_steps,
                 d.slow_excess_ms, d.steal_ms, d.run_delay_ms, d.involuntary_switches);
  }
  std::fputc('\n', out);
}

void PrintDecode(FILE* out, const BenchFigures& f) {
  std::fprintf(out, "decode      tok/s     tok/s   bytes/step   implied     bound   %% of\n");
  std::fprintf(out, "  depth    median      best        (MiB)      GB/s     tok/s  bound\n");
  for (const DepthFigures& d : f.depths) {
    std::fprintf(out, "  %-6d %8.1f  %8.1f  %11.2f  %8.2f  ", d.depth, d.decode_tps_median,
                 d.decode_tps_best, d.bytes_per_step / kMiB, d.implied_bytes_per_s / 1e9);
    if (std::isfinite(d.bound_tps)) {
      std::fprintf(out, "%8.1f  %5.1f\n", d.bound_tps, d.percent_of_bound);
    } else {
      std::fprintf(out, "%8s  %5s\n", "-", "-");  // no bandwidth probe
    }
  }
  std::fprintf(out, "\ndecode latency (ms)   min      p50      p90      p99      max    stdev\n");
  for (const DepthFigures& d : f.depths) {
    char label[24];
    std::snprintf(label, sizeof(label), "d=%d", d.depth);
    PrintLatencyRow(out, label, d.latency_ms);
  }
  PrintLatencyRow(out, "all", f.latency_ms);
  std::fputc('\n', out);
  PrintSlowSteps(out, f);
}

// --op-profile: where a decode token's time goes, per depth, then a prompt token's in prefill.
void PrintOpProfile(FILE* out, const BenchReport& r) {
  const BenchWorkload& w = *r.workload;
  if (!w.op_profile) return;
  for (size_t d = 0; d <= w.n_depths; ++d) {
    if (d < w.n_depths) {
      std::fprintf(out, "decode ops at depth %d (per token, %d reps x %d tokens)\n", w.depths[d],
                   w.reps, w.gen_tokens);
    } else {
      std::fprintf(out, "prefill ops (per prompt token, %d reps x %d tokens)\n", w.reps,
                   w.prompt_tokens);
    }
    std::fprintf(out, "  %-12s %-7s %8s %10s %7s %12s\n", "op", "weight", "calls", "ms", "%",
                 "weight GB/s");
    for (const OpProfileLine& line : OpProfileLines(r, d)) {
      std::fprintf(out, "  %-12s %-7s %8.1f %10.3f %7.1f ", line.op, line.weight,
                   line.calls_per_token, line.ms_per_token, line.percent);
      if (line.weight_gb_per_s > 0) {
        std::fprintf(out, "%12.2f\n", line.weight_gb_per_s);
      } else {
        std::fprintf(out, "%12s\n", "-");
      }
    }
    std::fputc('\n', out);
  }
}

void PrintMachineFigures(FILE* out, const BenchContextFacts& facts, const BenchFigures& f) {
  std::fprintf(out, "memory      peak RSS %.1f MiB, planned %.1f MiB, heap allocations after init ",
               facts.peak_rss_bytes / kMiB, facts.planned_bytes / kMiB);
  if (facts.heap_events < 0) {
    std::fprintf(out, "unavailable (sanitizer build)\n");
  } else {
    std::fprintf(out, "%lld by staticlm, %lld inside the device driver\n", facts.heap_events,
                 facts.driver_heap_events);
  }
  std::fprintf(out, "pages       %.1f MiB on huge pages (transparent huge pages \"%s\"",
               facts.resident_huge_bytes / kMiB, facts.huge_page_mode);
  if (facts.huge_page_bytes > 0) {
    std::fprintf(out, ", %.0f KiB; %s)\n", facts.huge_page_bytes / 1024.0,
                 facts.huge_pages_asked ? "asked for the cache, arena, io and packed weights"
                                        : "not asked: --small-pages");
  } else {
    std::fprintf(out, ": none usable)\n");
  }
  if (facts.bandwidth_measured) {
    std::fprintf(out,
                 "bandwidth   %.2f GB/s read (%.0f MiB on %s pages, %d threads, best of %d passes "
                 "a loop; fastest loop: %s); bound at depth 0 %.1f tok/s (%.2f MiB/step)",
                 facts.bandwidth.bytes_per_s / 1e9, facts.bandwidth.buffer_bytes / kMiB,
                 facts.bandwidth.huge_pages ? "huge" : "normal", facts.bandwidth.threads,
                 facts.bandwidth.passes, facts.bandwidth.loop, f.bound_tps_depth0,
                 facts.bytes_per_step_depth0 / kMiB);
    if (std::isfinite(f.percent_of_bound_depth0)) {
      std::fprintf(out, ", decode at %.1f%% of it", f.percent_of_bound_depth0);
    }
    std::fputc('\n', out);
    std::fprintf(out, "            probe loops:");
    for (int l = 0; l < facts.bandwidth.n_loops; ++l) {
      std::fprintf(out, "%s %s %.2f GB/s", l > 0 ? "," : "", facts.bandwidth.loop_names[l],
                   facts.bandwidth.loop_bytes_per_s[l] / 1e9);
    }
    std::fputc('\n', out);
  } else {
    std::fprintf(out, "bandwidth   not measured (--probe-mib 0)\n");
  }
  const NoiseProbe& a = facts.noise_before;
  const NoiseProbe& b = facts.noise_after;
  std::fprintf(
      out,
      "noise       spread (max/min of %d runs of a fixed loop) before %.2f (%.0f-%.0f us), "
      "after %.2f (%.0f-%.0f us)%s\n",
      kNoiseSamples, a.spread, a.min_us, a.max_us, b.spread, b.min_us, b.max_us,
      a.spread > 1.5 || b.spread > 1.5 ? "  -- noisy machine, treat figures with care" : "");
}

}  // namespace

std::vector<OpProfileLine> OpProfileLines(const BenchReport& r, size_t d) {
  const BenchWorkload& w = *r.workload;
  const BenchResults& results = *r.results;
  std::vector<OpProfileLine> lines;
  if (!w.op_profile) return lines;
  const staticlm_op_time* rows = results.op_rows.data() + d * kBenchOpRows;
  const size_t n = results.op_rows_used[d];
  // Per token: of the timed decode steps, or of the prompt for the prefill slot.
  const double tokens =
      static_cast<double>(w.reps) * (d == w.n_depths ? w.prompt_tokens : w.gen_tokens);
  double total = 0;
  for (size_t i = 0; i < n; ++i) total += rows[i].seconds;
  for (size_t i = 0; i < n; ++i) {
    const staticlm_op_time& row = rows[i];
    lines.push_back({row.op, row.weight, row.calls / tokens, row.seconds * 1e3 / tokens,
                     total > 0 ? 100.0 * row.seconds / total : 0,
                     row.seconds > 0 ? row.weight_bytes / row.seconds / 1e9 : 0});
  }
  std::sort(lines.begin(), lines.end(), [](const OpProfileLine& a, const OpProfileLine& b) {
    return a.ms_per_token > b.ms_per_token;
  });
  return lines;
}

void PrintBenchTable(FILE* out, const BenchReport& r) {
  PrintHeader(out, r);
  PrintFirstToken(out, *r.figures);
  PrintDecode(out, *r.figures);
  PrintOpProfile(out, r);
  PrintMachineFigures(out, *r.facts, *r.figures);
}

}  // namespace staticlm::cli
