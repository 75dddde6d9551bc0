// `staticlm bench --json FILE`. Key names are a stable interface: bench/README.md documents
// them; add keys, never rename them.
#include <cmath>
#include <cstdio>
#include <string>

#include "staticlm/staticlm.h"
#include "tools/staticlm/bench_json.h"
#include "tools/staticlm/bench_report.h"
#include "tools/staticlm/flag_values.h"

namespace staticlm::cli {
namespace {

std::string DepthKey(int32_t depth) {
  return std::to_string(depth);
}

void WriteSummary(JsonOut& j, const char* key, const Summary& s) {
  j.BeginObject(key);
  j.Number("min", s.min);
  j.Number("p50", s.p50);
  j.Number("p90", s.p90);
  j.Number("p99", s.p99);
  j.Number("max", s.max);
  j.Number("stdev", s.stdev);
  j.Number("mean", s.mean);
  j.Unsigned("count", s.count);
  j.EndObject();
}

void WriteNoise(JsonOut& j, const char* key, const NoiseProbe& n) {
  j.BeginObject(key);
  j.Number("min_us", n.min_us);
  j.Number("median_us", n.median_us);
  j.Number("max_us", n.max_us);
  j.Number("spread", n.spread);
  j.EndObject();
}

void WriteConfig(JsonOut& j, const BenchOptions& o, const BenchContextFacts& facts) {
  const staticlm_limits& l = o.limits;
  j.BeginObject("config");
  j.String("model", facts.model);
  j.Integer("prompt_tokens", o.prompt_tokens);
  j.Integer("gen_tokens", o.gen_tokens);
  j.BeginArray("depths");
  for (int32_t d : o.depths) j.Integer(nullptr, d);
  j.EndArray();
  j.Integer("reps", o.reps);
  j.Integer("warmup", o.warmup);
  j.Integer("threads", l.threads);
  j.Integer("ctx", l.max_context);
  j.Integer("chunk", l.prefill_chunk);
  j.String("kv", KvName(l.kv_type));
  j.Bool("reference", l.reference_kernels != 0);
  j.String("isa", l.isa != nullptr ? l.isa : "auto");  // asked; the backend line says chosen
  j.Bool("busy_wait", l.busy_wait != 0);
  j.Bool("pin", l.pin_threads != 0);
  j.Bool("lock", l.lock_memory != 0);
  j.Bool("huge_pages", l.huge_pages != 0);
  j.String("prompt_source", "fixed English text, tokenized and repeated (bench/README.md)");
  j.String("sampler", "greedy");
  j.EndObject();
}

void WriteMachine(JsonOut& j, const MachineInfo& m) {
  j.BeginObject("machine");
  j.String("cpu", m.cpu);
  j.Integer("cores", m.cores);
  j.Number("load_average_1m", m.load_average_1m >= 0 ? m.load_average_1m : NAN);
  j.Unsigned("llc_bytes", m.llc_bytes);
  j.EndObject();
}

// An object from depth (as a string) to one number per depth.
template <typename Get>
void WriteByDepth(JsonOut& j, const char* key, const BenchFigures& f, Get get) {
  j.BeginObject(key);
  for (const DepthFigures& d : f.depths) j.Number(DepthKey(d.depth).c_str(), get(d));
  j.EndObject();
}

void WritePerDepth(JsonOut& j, const BenchFigures& f) {
  WriteByDepth(j, "decode_tokens_per_s_by_depth", f, [](auto& d) { return d.decode_tps_median; });
  WriteByDepth(j, "decode_tokens_per_s_best_by_depth", f,
               [](auto& d) { return d.decode_tps_best; });
  WriteSummary(j, "decode_latency_ms", f.latency_ms);
  j.BeginObject("decode_latency_ms_by_depth");
  for (const DepthFigures& d : f.depths) WriteSummary(j, DepthKey(d.depth).c_str(), d.latency_ms);
  j.EndObject();
  j.BeginObject("bytes_read_per_decode_step");
  for (const DepthFigures& d : f.depths) j.Unsigned(DepthKey(d.depth).c_str(), d.bytes_per_step);
  j.EndObject();
  WriteByDepth(j, "implied_bandwidth_bytes_per_s_by_depth", f,
               [](auto& d) { return d.implied_bytes_per_s; });
  WriteByDepth(j, "bandwidth_bound_tokens_per_s_by_depth", f, [](auto& d) { return d.bound_tps; });
  WriteByDepth(j, "decode_percent_of_bound_by_depth", f,
               [](auto& d) { return d.percent_of_bound; });
  WriteByDepth(j, "slow_steps_by_depth", f, [](auto& d) { return double(d.slow_steps); });
  WriteByDepth(j, "slow_steps_ms_above_p50_by_depth", f, [](auto& d) { return d.slow_excess_ms; });
  WriteByDepth(j, "decode_host_steal_ms_by_depth", f, [](auto& d) { return d.steal_ms; });
  WriteByDepth(j, "decode_cpu_wait_ms_by_depth", f, [](auto& d) { return d.run_delay_ms; });
  WriteByDepth(j, "decode_involuntary_switches_by_depth", f, [](auto& d) {
    return d.involuntary_switches >= 0 ? double(d.involuntary_switches) : NAN;
  });
}

void WriteReps(JsonOut& j, const BenchReport& r) {
  const BenchFigures& f = *r.figures;
  j.BeginArray("reps");
  for (const RepFigures& rep : f.reps) {
    j.BeginObject();
    j.Number("ttft_ms", rep.ttft_ms);
    j.Number("prefill_tokens_per_s", rep.prefill_tps);
    j.Number("sync_ms_per_token", rep.sync_ms_per_token);
    j.BeginObject("decode_tokens_per_s_by_depth");
    for (size_t d = 0; d < f.depths.size(); ++d) {
      j.Number(DepthKey(f.depths[d].depth).c_str(), rep.decode_tps[d]);
    }
    j.EndObject();
    j.EndObject();
  }
  j.EndArray();
  // The raw latencies, for plots and statistics of one's own: depth → [rep][step] in ms.
  const BenchWorkload& w = *r.workload;
  j.BeginObject("decode_latency_samples_ms");
  for (size_t d = 0; d < w.n_depths; ++d) {
    j.BeginArray(DepthKey(w.depths[d]).c_str());
    for (int32_t rep = 0; rep < w.reps; ++rep) {
      j.BeginArray();
      for (int32_t i = 0; i < w.gen_tokens; ++i) {
        j.Number(nullptr, r.results->LatencyAt(w, rep, d, i) * 1e3);
      }
      j.EndArray();
    }
    j.EndArray();
  }
  j.EndObject();
}

// The rows of op-profile slot `d`, slowest first, as an array named `key`.
void WriteOpRows(JsonOut& j, const BenchReport& r, size_t d, const char* key) {
  j.BeginArray(key);
  for (const OpProfileLine& line : OpProfileLines(r, d)) {
    j.BeginObject();
    j.String("op", line.op);
    j.String("weight", line.weight);
    j.Number("calls_per_token", line.calls_per_token);
    j.Number("ms_per_token", line.ms_per_token);
    j.Number("percent", line.percent);
    j.Number("weight_gb_per_s", line.weight_gb_per_s);
    j.EndObject();
  }
  j.EndArray();
}

// --op-profile: depth → rows, then the prefill's rows (per prompt token); absent without it.
void WriteOpProfile(JsonOut& j, const BenchReport& r) {
  const BenchWorkload& w = *r.workload;
  if (!w.op_profile) return;
  j.BeginObject("decode_op_profile_by_depth");
  for (size_t d = 0; d < w.n_depths; ++d) WriteOpRows(j, r, d, DepthKey(w.depths[d]).c_str());
  j.EndObject();
  WriteOpRows(j, r, w.n_depths, "prefill_op_profile");
}

}  // namespace

void WriteBenchJson(FILE* out, const BenchReport& r) {
  const BenchFigures& f = *r.figures;
  const BenchContextFacts& facts = *r.facts;
  JsonOut j(out);
  j.BeginObject();
  j.String("schema", "staticlm-bench/1");
  j.String("staticlm_version", staticlm_version());
  WriteConfig(j, *r.options, facts);
  WriteMachine(j, facts.machine);
  j.String("backend", facts.backend);
  j.Integer("threads", r.options->limits.threads);
  j.Number("init_ms", f.init_ms);
  j.Number("ttft_ms", f.ttft_ms_median);
  j.Number("ttft_ms_best", f.ttft_ms_best);
  j.Number("prefill_tokens_per_s", f.prefill_tps_median);
  j.Number("prefill_tokens_per_s_best", f.prefill_tps_best);
  WritePerDepth(j, f);
  j.Number("sync_ms_per_token", f.sync_ms_per_token_median);
  j.Unsigned("peak_rss_bytes", facts.peak_rss_bytes);
  j.Unsigned("planned_bytes", facts.planned_bytes);
  j.String("transparent_huge_pages", facts.huge_page_mode);
  j.Unsigned("huge_page_bytes", facts.huge_page_bytes);
  j.Unsigned("resident_huge_page_bytes", facts.resident_huge_bytes);
  if (facts.heap_events < 0) {
    j.Null("heap_allocs_after_init");
    j.Null("driver_heap_allocs_after_init");
  } else {
    j.Integer("heap_allocs_after_init", facts.heap_events);
    j.Integer("driver_heap_allocs_after_init", facts.driver_heap_events);
  }
  j.Number("read_bandwidth_bytes_per_s",
           facts.bandwidth_measured ? facts.bandwidth.bytes_per_s : NAN);
  j.Unsigned("read_bandwidth_probe_bytes",
             facts.bandwidth_measured ? facts.bandwidth.buffer_bytes : 0);
  j.String("read_bandwidth_probe_loop", facts.bandwidth_measured ? facts.bandwidth.loop : "");
  j.Bool("read_bandwidth_probe_huge_pages", facts.bandwidth_measured && facts.bandwidth.huge_pages);
  j.BeginObject("read_bandwidth_by_probe_loop");  // bytes/s of every loop the probe timed
  for (int l = 0; facts.bandwidth_measured && l < facts.bandwidth.n_loops; ++l) {
    j.Number(facts.bandwidth.loop_names[l], facts.bandwidth.loop_bytes_per_s[l]);
  }
  j.EndObject();
  j.Unsigned("bytes_read_per_decode_step_depth0", facts.bytes_per_step_depth0);
  j.Number("bandwidth_bound_tokens_per_s", f.bound_tps_depth0);
  j.Number("decode_percent_of_bound", f.percent_of_bound_depth0);
  j.BeginObject("noise");
  j.Integer("samples", kNoiseSamples);
  WriteNoise(j, "before", facts.noise_before);
  WriteNoise(j, "after", facts.noise_after);
  j.EndObject();
  WriteReps(j, r);
  WriteOpProfile(j, r);
  j.EndObject();
}

}  // namespace staticlm::cli
