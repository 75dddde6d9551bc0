// The soak's JSON report and its SVG: per-token latency (p50, p99) and RSS against tokens
// generated, one point per interval.
#include <algorithm>
#include <cstdio>

#include "tools/staticlm/bench_json.h"
#include "tools/staticlm/bench_machine.h"
#include "tools/staticlm/soak.h"

namespace staticlm::cli {

void WriteSoakJson(FILE* out, const SoakOptions& o, const SoakResult& r) {
  JsonOut j(out);
  j.BeginObject();
  j.String("model", o.model);
  j.String("backend", r.backend);
  j.Integer("window", r.window);
  j.Integer("threads", o.limits.threads);
  j.Integer("tokens", o.tokens);
  j.Integer("every", o.every);
  j.Integer("warmup", o.warmup);
  j.Number("seconds", r.seconds);
  j.Unsigned("rss_min_after_warmup_bytes", r.rss_min_after_warmup);
  j.Unsigned("rss_max_after_warmup_bytes", r.rss_max_after_warmup);
  const SoakSample& last = r.samples.back();
  if (last.heap_events < 0) {
    j.Null("heap_allocs_after_init");
    j.Null("driver_heap_allocs_after_init");
  } else {
    j.Integer("heap_allocs_after_init", last.heap_events);
    j.Integer("driver_heap_allocs_after_init", last.driver_heap_events);
  }
  MachineInfo machine = ReadMachineInfo();
  j.String("cpu", machine.cpu);
  j.Number("load_average_1m_at_end", machine.load_average_1m);
  j.BeginArray("samples");
  for (const SoakSample& s : r.samples) {
    j.BeginObject();
    j.Integer("tokens", s.tokens);
    j.Number("p50_ms", s.p50_ms);
    j.Number("p99_ms", s.p99_ms);
    j.Number("max_ms", s.max_ms);
    j.Unsigned("rss_bytes", s.rss_bytes);
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
  std::fputc('\n', out);
}

namespace {

constexpr double kWidth = 760, kHeight = 250, kLeft = 70, kRight = 20, kTop = 44, kBottom = 40;

// One panel: `value(sample)` against tokens, scaled to [0, top].
template <typename Value>
void Polyline(FILE* out, const SoakResult& r, double y0, double top, const char* color,
              Value value) {
  const double span = static_cast<double>(r.samples.back().tokens);
  std::fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", color);
  for (const SoakSample& s : r.samples) {
    const double x = kLeft + (kWidth - kLeft - kRight) * static_cast<double>(s.tokens) / span;
    const double y = y0 + kHeight - kBottom - (kHeight - kTop - kBottom) * value(s) / top;
    std::fprintf(out, "%.1f,%.1f ", x, y);
  }
  std::fputs("\"/>\n", out);
}

void Frame(FILE* out, const SoakResult& r, double y0, double top, const char* label) {
  const double x1 = kWidth - kRight, yb = y0 + kHeight - kBottom, yt = y0 + kTop;
  std::fprintf(
      out,
      "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n"
      "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n"
      "<text x=\"%.0f\" y=\"%.0f\" font-size=\"12\">%s (top of axis: %.2f)</text>\n"
      "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\">0</text>\n"
      "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\" text-anchor=\"end\">%lld tokens</text>\n",
      kLeft, yb, x1, yb, kLeft, yb, kLeft, yt, kLeft, yt - 8, label, top, kLeft - 12, yb + 4, x1,
      yb + 16, static_cast<long long>(r.samples.back().tokens));
}

}  // namespace

void WriteSoakSvg(FILE* out, const SoakOptions& o, const SoakResult& r) {
  double latency_top = 0, rss_top = 0;
  for (const SoakSample& s : r.samples) {
    latency_top = std::max(latency_top, s.p99_ms);
    rss_top = std::max(rss_top, s.rss_bytes / 1048576.0);
  }
  latency_top = std::max(latency_top * 1.1, 1e-3);
  rss_top = std::max(rss_top * 1.1, 1.0);
  std::fprintf(out,
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\">\n"
               "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
               "<text x=\"%.0f\" y=\"16\" font-size=\"13\">staticlm soak: %lld tokens, %s, window "
               "%lld, %d thread(s); one point per %d tokens</text>\n",
               kWidth, 2 * kHeight, kLeft, static_cast<long long>(o.tokens), r.backend,
               static_cast<long long>(r.window), o.limits.threads, o.every);
  Frame(out, r, 0, latency_top, "per-token latency, ms: p50 (blue), p99 (red)");
  Polyline(out, r, 0, latency_top, "#1f5fbf", [](const SoakSample& s) { return s.p50_ms; });
  Polyline(out, r, 0, latency_top, "#c0392b", [](const SoakSample& s) { return s.p99_ms; });
  Frame(out, r, kHeight, rss_top, "resident memory, MiB");
  Polyline(out, r, kHeight, rss_top, "#2e7d32",
           [](const SoakSample& s) { return s.rss_bytes / 1048576.0; });
  std::fputs("</svg>\n", out);
}

}  // namespace staticlm::cli
