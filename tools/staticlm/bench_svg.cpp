// `staticlm bench --plot FILE`: an SVG of per-token decode latency, written by hand (no library)
// so the plot needs nothing but a browser. One colour per depth; its repetitions are overlaid.
#include <cmath>
#include <cstdio>

#include "tools/staticlm/bench_report.h"

namespace staticlm::cli {
namespace {

constexpr double kWidth = 960, kHeight = 540;
constexpr double kLeft = 70, kRight = 200, kTop = 50, kBottom = 60;
constexpr double kPlotW = kWidth - kLeft - kRight, kPlotH = kHeight - kTop - kBottom;
constexpr const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

// A tick step of 1, 2 or 5 × 10^k giving at most about `ticks` intervals over `range`.
double NiceStep(double range, int ticks) {
  double raw = range / ticks;
  double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * magnitude >= raw) return m * magnitude;
  }
  return 10 * magnitude;
}

void WriteEscaped(FILE* out, const char* text) {
  for (const char* p = text; *p != '\0'; ++p) {
    switch (*p) {
      case '<':
        std::fputs("&lt;", out);
        break;
      case '>':
        std::fputs("&gt;", out);
        break;
      case '&':
        std::fputs("&amp;", out);
        break;
      case '"':
        std::fputs("&quot;", out);
        break;
      default:
        std::fputc(*p, out);
    }
  }
}

struct Axes {
  double x_max;  // last step index (at least 1)
  double y_max;  // ms, a multiple of y_step
  double y_step;
  double x_step;
  double X(double step) const { return kLeft + step / x_max * kPlotW; }
  double Y(double ms) const { return kTop + kPlotH - ms / y_max * kPlotH; }
};

Axes MakeAxes(const BenchWorkload& w, const BenchFigures& f) {
  Axes a;
  a.x_max = w.gen_tokens > 1 ? w.gen_tokens - 1 : 1;
  double top = std::isfinite(f.latency_ms.max) && f.latency_ms.max > 0 ? f.latency_ms.max : 1;
  a.y_step = NiceStep(top, 6);
  a.y_max = std::ceil(top / a.y_step) * a.y_step;
  a.x_step = NiceStep(a.x_max, 8);
  if (a.x_step < 1) a.x_step = 1;
  return a;
}

void WriteAxes(FILE* out, const Axes& a) {
  std::fprintf(out, "<g stroke=\"#000\" stroke-width=\"1\">\n");
  std::fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", kLeft, kTop, kLeft,
               kTop + kPlotH);
  std::fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", kLeft,
               kTop + kPlotH, kLeft + kPlotW, kTop + kPlotH);
  std::fprintf(out, "</g>\n<g font-family=\"sans-serif\" font-size=\"12\">\n");
  for (double v = 0; v <= a.y_max + a.y_step * 1e-6; v += a.y_step) {
    double y = a.Y(v);
    std::fprintf(out,
                 "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                 "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
                 kLeft, y, kLeft + kPlotW, y, kLeft - 6, y + 4, v);
  }
  for (double s = 0; s <= a.x_max + 1e-6; s += a.x_step) {
    double x = a.X(s);
    std::fprintf(out,
                 "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\"/>"
                 "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n",
                 x, kTop + kPlotH, x, kTop + kPlotH + 5, x, kTop + kPlotH + 19, s);
  }
  std::fprintf(out,
               "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">decode step after the depth "
               "(cache position = depth + step)</text>\n",
               kLeft + kPlotW / 2, kHeight - 18);
  std::fprintf(out,
               "<text transform=\"translate(18 %.1f) rotate(-90)\" text-anchor=\"middle\">"
               "latency per token (ms)</text>\n</g>\n",
               kTop + kPlotH / 2);
}

void WriteLines(FILE* out, const BenchReport& r, const Axes& a) {
  const BenchWorkload& w = *r.workload;
  for (size_t d = 0; d < w.n_depths; ++d) {
    const char* colour = kColours[d % (sizeof(kColours) / sizeof(kColours[0]))];
    for (int32_t rep = 0; rep < w.reps; ++rep) {
      std::fprintf(out,
                   "<polyline data-depth=\"%d\" data-rep=\"%d\" fill=\"none\" stroke=\"%s\" "
                   "stroke-width=\"1.2\" stroke-opacity=\"0.7\" points=\"",
                   w.depths[d], rep, colour);
      for (int32_t i = 0; i < w.gen_tokens; ++i) {
        double ms = r.results->LatencyAt(w, rep, d, i) * 1e3;
        std::fprintf(out, "%s%.1f,%.1f", i ? " " : "", a.X(i), a.Y(ms));
      }
      std::fputs("\"/>\n", out);
    }
  }
}

void WriteLegend(FILE* out, const BenchReport& r) {
  const BenchFigures& f = *r.figures;
  double x = kLeft + kPlotW + 20;
  std::fprintf(out, "<g font-family=\"sans-serif\" font-size=\"12\">\n");
  std::fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-weight=\"bold\">depth (p50, p99 ms)</text>\n",
               x, kTop + 10);
  for (size_t d = 0; d < f.depths.size(); ++d) {
    double y = kTop + 32 + 20 * static_cast<double>(d);
    const char* colour = kColours[d % (sizeof(kColours) / sizeof(kColours[0]))];
    std::fprintf(out,
                 "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                 "stroke-width=\"3\"/><text x=\"%.1f\" y=\"%.1f\">%d (%.2f, %.2f)</text>\n",
                 x, y - 4, x + 24, y - 4, colour, x + 30, y, f.depths[d].depth,
                 f.depths[d].latency_ms.p50, f.depths[d].latency_ms.p99);
  }
  std::fprintf(out, "<text x=\"%.1f\" y=\"%.1f\">%d rep(s) overlaid</text>\n</g>\n", x,
               kTop + 40 + 20 * static_cast<double>(f.depths.size()), r.options->reps);
}

}  // namespace

void WriteBenchSvg(FILE* out, const BenchReport& r) {
  Axes a = MakeAxes(*r.workload, *r.figures);
  std::fprintf(
      out,
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
      "viewBox=\"0 0 %.0f %.0f\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n",
      kWidth, kHeight, kWidth, kHeight);
  std::fprintf(out,
               "<text x=\"%.1f\" y=\"26\" font-family=\"sans-serif\" font-size=\"15\" "
               "text-anchor=\"middle\">staticlm decode latency per token: ",
               kWidth / 2);
  WriteEscaped(out, r.facts->backend);
  std::fputs("</text>\n", out);
  WriteAxes(out, a);
  WriteLines(out, r, a);
  WriteLegend(out, r);
  std::fputs("</svg>\n", out);
}

}  // namespace staticlm::cli
