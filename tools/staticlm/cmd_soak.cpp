// `staticlm soak`: generates --tokens tokens in one conversation with a sliding-window cache,
// and every --every tokens prints one line (and keeps a sample) of resident memory, per-token
// latency percentiles and heap events. Ends with a verdict: RSS flat after the warm-up
// (--warmup tokens, default 1000: allocators and driver caches settle) within ±1 MiB, and no
// heap event by staticlm; otherwise exit status 1 and a line saying which failed.
// Everything the loop needs is allocated before the run phase starts.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "platform/alloc_counter.h"
#include "platform/clock.h"
#include "platform/process_stats.h"
#include "tools/staticlm/commands.h"
#include "tools/staticlm/soak.h"

namespace staticlm::cli {
namespace {

constexpr uint64_t kRssTolerance = 1 << 20;  // the issue's ±1 MiB after warm-up

// Percentile `q` of `ms[0..n)`, reordering it (nth_element: no allocation).
double Percentile(double* ms, size_t n, double q) {
  size_t k = std::min(n - 1, static_cast<size_t>(q * static_cast<double>(n)));
  std::nth_element(ms, ms + k, ms + n);
  return ms[k];
}

SoakSample Summarize(int64_t tokens, double* ms, size_t n) {
  SoakSample s;
  s.tokens = tokens;
  s.p50_ms = Percentile(ms, n, 0.50);
  s.p99_ms = Percentile(ms, n, 0.99);
  s.max_ms = *std::max_element(ms, ms + n);
  s.rss_bytes = CurrentRssBytes();
  if (alloc_counter::Available()) {
    s.heap_events = static_cast<long long>(alloc_counter::Events());
    s.driver_heap_events = static_cast<long long>(alloc_counter::DriverEvents());
  }
  return s;
}

void PrintSample(const SoakSample& s) {
  std::fprintf(stderr,
               "[soak] tokens=%lld rss=%.2f MiB p50=%.2f ms p99=%.2f ms max=%.2f ms "
               "heap_allocs_after_init=%lld driver_heap_allocs_after_init=%lld\n",
               static_cast<long long>(s.tokens), s.rss_bytes / 1048576.0, s.p50_ms, s.p99_ms,
               s.max_ms, s.heap_events, s.driver_heap_events);
}

// The run phase: prompt, then `tokens` sampled tokens (end-of-generation tokens included: the
// soak goes on), one sample per interval into `result` (sized before).
staticlm_status Generate(staticlm_context* ctx, const SoakOptions& o, const int32_t* prompt,
                         size_t n_prompt, double* ms, SoakResult* result) {
  staticlm_sampler sampler;
  staticlm_sampler_default(&sampler);
  staticlm_status s = staticlm_prefill(ctx, prompt, n_prompt);
  size_t in_interval = 0, sample = 0;
  const double start = NowSeconds();
  for (int64_t t = 1; s == STATICLM_OK && t <= o.tokens; ++t) {
    const double t0 = NowSeconds();
    int32_t token = 0;
    s = staticlm_sample(ctx, &sampler, &token);
    if (s == STATICLM_OK) s = staticlm_decode(ctx, token);
    ms[in_interval++] = (NowSeconds() - t0) * 1e3;
    if (in_interval == static_cast<size_t>(o.every) || t == o.tokens) {
      result->samples[sample] = Summarize(t, ms, in_interval);
      PrintSample(result->samples[sample++]);
      in_interval = 0;
    }
  }
  result->samples.resize(sample);  // shrinks: never allocates
  result->seconds = NowSeconds() - start;
  return s;
}

// The verdict lines; returns the exit status.
int Verdict(const SoakResult& r) {
  int status = 0;
  const uint64_t growth = r.rss_max_after_warmup - r.rss_min_after_warmup;
  std::fprintf(stderr, "[soak] RSS after warm-up: %.2f … %.2f MiB (spread %.3f MiB)\n",
               r.rss_min_after_warmup / 1048576.0, r.rss_max_after_warmup / 1048576.0,
               growth / 1048576.0);
  if (growth > kRssTolerance) {
    std::fprintf(stderr, "staticlm: soak: RSS moved by %.2f MiB after warm-up (limit 1 MiB)\n",
                 growth / 1048576.0);
    status = 1;
  }
  const SoakSample& last = r.samples.back();
  if (last.heap_events > 0) {
    std::fprintf(stderr, "staticlm: soak: %lld heap events by staticlm after init\n",
                 last.heap_events);
    status = 1;
  }
  return status;
}

void MeasureRssSpread(int64_t warmup, SoakResult* r) {
  bool first = true;
  for (const SoakSample& s : r->samples) {
    if (s.tokens <= warmup && &s != &r->samples.back()) continue;
    r->rss_min_after_warmup = first ? s.rss_bytes : std::min(r->rss_min_after_warmup, s.rss_bytes);
    r->rss_max_after_warmup = first ? s.rss_bytes : std::max(r->rss_max_after_warmup, s.rss_bytes);
    first = false;
  }
}

bool WriteFile(const char* path, const SoakOptions& o, const SoakResult& r, bool svg) {
  FILE* f = std::fopen(path, "w");
  if (f == nullptr) {
    std::fprintf(stderr, "staticlm: cannot write %s\n", path);
    return false;
  }
  if (svg) {
    WriteSoakSvg(f, o, r);
  } else {
    WriteSoakJson(f, o, r);
  }
  return std::fclose(f) == 0;
}

}  // namespace

int SoakCommand(int argc, char** argv) {
  SoakOptions o;
  if (!ParseSoakOptions(argc, argv, 2, &o)) return 2;
  if (o.limits.window == 0 && o.tokens + 64 > o.limits.max_context) {
    std::fprintf(stderr,
                 "staticlm: soak: %lld tokens need a sliding window (--window W) or a context "
                 "of that many positions (--ctx)\n",
                 static_cast<long long>(o.tokens));
    return 2;
  }
  staticlm_context* ctx = nullptr;
  char error[256];
  if (staticlm_create(o.model, &o.limits, &ctx, error, sizeof(error)) != STATICLM_OK) {
    std::fprintf(stderr, "staticlm: %s\n", error);
    return 1;
  }
  std::unique_ptr<staticlm_context, void (*)(staticlm_context*)> owner(ctx, staticlm_destroy);
  staticlm_seed(ctx, o.seed);
  std::vector<int32_t> prompt(std::strlen(o.prompt) + 8);
  size_t n_prompt = 0;
  if (staticlm_tokenize(ctx, o.prompt, std::strlen(o.prompt), 1, prompt.data(), prompt.size(),
                        &n_prompt) != STATICLM_OK) {
    std::fprintf(stderr, "staticlm: %s\n", staticlm_last_error(ctx));
    return 1;
  }
  SoakResult result;
  result.backend = staticlm_backend_name(ctx);
  result.window = o.limits.window;
  result.samples.resize(static_cast<size_t>((o.tokens + o.every - 1) / o.every));
  std::vector<double> ms(static_cast<size_t>(o.every));

  alloc_counter::Start();  // from here on: the run phase
  staticlm_status s = Generate(ctx, o, prompt.data(), n_prompt, ms.data(), &result);
  alloc_counter::Stop();
  if (s != STATICLM_OK) {
    std::fprintf(stderr, "staticlm: %s\n", staticlm_last_error(ctx));
    return 1;
  }
  MeasureRssSpread(o.warmup, &result);
  std::fprintf(stderr, "[soak] %lld tokens on %s in %.1f s (%.1f tok/s)\n",
               static_cast<long long>(o.tokens), result.backend, result.seconds,
               o.tokens / result.seconds);
  if (o.json_path != nullptr && !WriteFile(o.json_path, o, result, false)) return 1;
  if (o.plot_path != nullptr && !WriteFile(o.plot_path, o, result, true)) return 1;
  return Verdict(result);
}

}  // namespace staticlm::cli
