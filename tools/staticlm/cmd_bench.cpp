// `staticlm bench`: the deterministic-latency benchmark. Measures init, time to first token,
// prefill speed and per-token decode latency at several cache depths, repeated, and relates the
// decode speed to the machine's read bandwidth. See bench/README.md.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "platform/alloc_counter.h"
#include "platform/bandwidth_probe.h"
#include "platform/clock.h"
#include "platform/huge_pages.h"
#include "platform/process_stats.h"
#include "tools/staticlm/bench_figures.h"
#include "tools/staticlm/bench_machine.h"
#include "tools/staticlm/bench_options.h"
#include "tools/staticlm/bench_prompt.h"
#include "tools/staticlm/bench_report.h"
#include "tools/staticlm/bench_runner.h"
#include "tools/staticlm/commands.h"
#include "tools/staticlm/heap_counts.h"

namespace staticlm::cli {
namespace {

constexpr uint64_t kMinProbeBytes = uint64_t{256} << 20;

// The model's trained context, read from staticlm_describe_model's "architecture:" line so the
// default
// --ctx can be capped without creating a context first. 0 if the line is not found; -1 (after
// printing the error) if the model cannot be read.
int32_t ModelContextLength(const char* model) {
  constexpr size_t kBytes = 1 << 16;
  std::unique_ptr<char[]> text(new char[kBytes]);
  char error[256];
  if (staticlm_describe_model(model, text.get(), kBytes, error, sizeof(error)) != STATICLM_OK) {
    std::fprintf(stderr, "staticlm: %s\n", error);
    return -1;
  }
  const char* line = std::strstr(text.get(), "\narchitecture:");
  const char* field = line != nullptr ? std::strstr(line, ", context ") : nullptr;
  return field != nullptr ? static_cast<int32_t>(std::atoi(field + 10)) : 0;
}

// Opens --json / --plot files before measuring, so a bad path fails in a second, not a minute.
FILE* OpenOutput(const char* flag, const char* path) {
  FILE* f = std::fopen(path, "w");
  if (f == nullptr) {
    std::fprintf(stderr, "staticlm: cannot write %s file '%s': %s\n", flag, path,
                 std::strerror(errno));
  }
  return f;
}

bool CloseOutput(const char* flag, const char* path, FILE* f) {
  bool ok = !std::ferror(f);
  ok = std::fclose(f) == 0 && ok;
  if (!ok) std::fprintf(stderr, "staticlm: writing %s file '%s' failed\n", flag, path);
  return ok;
}

// Streams memory in a child process (its buffer never counts toward our peak RSS), before the
// context exists, with as many threads as the context will use.
bool ProbeBandwidth(const BenchOptions& o, BenchContextFacts* facts) {
  if (o.probe_mib == 0) return true;
  BandwidthProbeOptions probe;
  probe.threads = o.limits.threads;
  if (o.probe_mib > 0) {
    probe.buffer_bytes = static_cast<uint64_t>(o.probe_mib) << 20;
  } else {
    uint64_t four_llc = 4 * facts->machine.llc_bytes;
    probe.buffer_bytes = four_llc > kMinProbeBytes ? four_llc : kMinProbeBytes;
  }
  Status s = MeasureReadBandwidthInChild(probe, &facts->bandwidth);
  if (!s.ok()) {
    std::fprintf(stderr, "staticlm: %s\n", s.message());
    return false;
  }
  facts->bandwidth_measured = true;
  return true;
}

struct Outputs {
  FILE* json = nullptr;
  FILE* plot = nullptr;
};

bool OpenOutputs(const BenchOptions& o, Outputs* out) {
  if (o.json_path != nullptr && (out->json = OpenOutput("--json", o.json_path)) == nullptr) {
    return false;
  }
  if (o.plot_path != nullptr && (out->plot = OpenOutput("--plot", o.plot_path)) == nullptr) {
    if (out->json != nullptr) std::fclose(out->json);
    return false;
  }
  return true;
}

// Everything after the context exists: the counted run phase, then the reports.
int MeasureAndReport(staticlm_context* ctx, const BenchOptions& o, BenchContextFacts* facts,
                     Outputs* outputs) {
  std::vector<int32_t> tokens;
  size_t n_tokens = static_cast<size_t>(o.prompt_tokens);
  for (int32_t d : o.depths) n_tokens = std::max(n_tokens, static_cast<size_t>(d));
  if (BuildBenchTokens(ctx, n_tokens, &tokens) != STATICLM_OK) {
    std::fprintf(stderr, "staticlm: %s\n", staticlm_last_error(ctx));
    return 1;
  }
  BenchWorkload w{tokens.data(),   o.prompt_tokens, o.gen_tokens, o.depths.data(),
                  o.depths.size(), o.reps,          o.warmup,     o.limits.profile_ops != 0};
  size_t op_rows = 0;
  if (w.op_profile && staticlm_op_profile(ctx, nullptr, 0, &op_rows) != STATICLM_OK) {
    std::fprintf(stderr,
                 "staticlm: --op-profile: the %s backend does not time its ops (the cpu, "
                 "vulkan and cuda backends do)\n",
                 staticlm_backend_name(ctx));
    return 2;
  }
  BenchResults results;
  AllocateBenchResults(w, &results);
  staticlm_step_cost cost;
  for (int32_t d : o.depths) {
    staticlm_step_cost_get(ctx, 1, d, &cost);
    facts->bytes_per_step.push_back(cost.bytes_read);
  }
  staticlm_step_cost_get(ctx, 1, 0, &cost);
  facts->bytes_per_step_depth0 = cost.bytes_read;
  staticlm_memory memory;
  staticlm_get_memory(ctx, &memory);
  facts->planned_bytes = memory.total_bytes;

  alloc_counter::Start();  // from here on: the run phase
  staticlm_status s = RunBench(ctx, w, &results);
  alloc_counter::Stop();
  const HeapCounts heap = ReadHeapCounts();
  facts->heap_events = heap.own;
  facts->driver_heap_events = heap.driver;
  facts->noise_after = RunNoiseProbe();
  facts->peak_rss_bytes = PeakRssBytes();
  facts->huge_pages_asked = o.limits.huge_pages != 0;
  facts->huge_page_mode = QueryHugePages().mode;
  facts->huge_page_bytes = QueryHugePages().page_bytes;
  facts->resident_huge_bytes = ResidentHugePageBytes(nullptr, SIZE_MAX);
  if (s != STATICLM_OK) {
    std::fprintf(stderr, "staticlm: %s\n", staticlm_last_error(ctx));
    return 1;
  }
  facts->backend = staticlm_backend_description(ctx);

  BenchFigures figures = ComputeBenchFigures(w, results, *facts);
  BenchReport report{&o, &w, &results, facts, &figures};
  PrintBenchTable(stdout, report);
  std::fflush(stdout);
  bool ok = true;
  if (outputs->json != nullptr) {
    WriteBenchJson(outputs->json, report);
    ok = CloseOutput("--json", o.json_path, outputs->json) && ok;
    outputs->json = nullptr;
  }
  if (outputs->plot != nullptr) {
    WriteBenchSvg(outputs->plot, report);
    ok = CloseOutput("--plot", o.plot_path, outputs->plot) && ok;
    outputs->plot = nullptr;
  }
  return ok ? 0 : 1;
}

}  // namespace

int BenchCommand(int argc, char** argv) {
  BenchOptions o;
  if (!ParseBenchOptions(argc, argv, 2, &o)) return 2;
  int32_t model_context = ModelContextLength(o.model);
  if (model_context < 0) return 1;
  if (!ResolveBenchContext(model_context, &o)) return 2;
  Outputs outputs;
  if (!OpenOutputs(o, &outputs)) return 1;

  BenchContextFacts facts;
  facts.model = o.model;
  facts.machine = ReadMachineInfo();
  facts.noise_before = RunNoiseProbe();
  int exit_code = 1;
  staticlm_context* ctx = nullptr;
  if (ProbeBandwidth(o, &facts)) {
    char error[256];
    double start = NowSeconds();
    staticlm_status s = staticlm_create(o.model, &o.limits, &ctx, error, sizeof(error));
    facts.init_s = NowSeconds() - start;
    if (s == STATICLM_OK) {
      if (staticlm_init_notes(ctx)[0] != '\0') {
        std::fprintf(stderr, "staticlm: note: %s\n", staticlm_init_notes(ctx));
      }
      exit_code = MeasureAndReport(ctx, o, &facts, &outputs);
    } else {
      std::fprintf(stderr, "staticlm: %s\n", error);
    }
  }
  if (outputs.json != nullptr) std::fclose(outputs.json);
  if (outputs.plot != nullptr) std::fclose(outputs.plot);
  staticlm_destroy(ctx);
  return exit_code;
}

}  // namespace staticlm::cli
