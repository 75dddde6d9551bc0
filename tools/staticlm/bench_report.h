// The outputs of `staticlm bench`: a readable table, the --json object (schema in
// bench/README.md) and the --plot SVG. All are written after the run phase and may allocate.
#pragma once

#include <cstdio>
#include <vector>

#include "tools/staticlm/bench_figures.h"
#include "tools/staticlm/bench_options.h"
#include "tools/staticlm/bench_runner.h"

namespace staticlm::cli {

// Everything a report draws on; borrowed, must outlive the call.
struct BenchReport {
  const BenchOptions* options;
  const BenchWorkload* workload;
  const BenchResults* results;
  const BenchContextFacts* facts;
  const BenchFigures* figures;
};

// bench_report_text.cpp
void PrintBenchTable(FILE* out, const BenchReport& report);

// One row of --op-profile's table, per decode token at one depth.
struct OpProfileLine {
  const char* op;
  const char* weight;
  double calls_per_token;
  double ms_per_token;
  double percent;          // of the summed op time
  double weight_gb_per_s;  // the products' weight bytes over their time; 0 for other ops
};
// The rows of depth index `d`, slowest first (empty without --op-profile).
std::vector<OpProfileLine> OpProfileLines(const BenchReport& report, size_t d);

// bench_report_json.cpp: one JSON object with stable key names.
void WriteBenchJson(FILE* out, const BenchReport& report);

// bench_svg.cpp: per-token decode latency (ms) against the step index after each depth, one
// polyline per depth and repetition, with axes, ticks and a legend.
void WriteBenchSvg(FILE* out, const BenchReport& report);

}  // namespace staticlm::cli
