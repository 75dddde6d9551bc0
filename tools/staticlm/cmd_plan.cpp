// `staticlm plan`: builds the plans ahead of time. -o FILE saves them (run --plan FILE loads
// them without building a graph), --print shows the op table, --json a summary object.
#include <cstdio>
#include <memory>

#include "tools/staticlm/cli_options.h"
#include "tools/staticlm/commands.h"

namespace staticlm::cli {
namespace {

int PrintReport(const Options& o, int json) {
  char error[256];
  size_t capacity = 1 << 20, needed = 0;
  std::unique_ptr<char[]> text(new char[capacity]);
  if (staticlm_plan_report(o.model, &o.limits, json, text.get(), capacity, &needed, error,
                           sizeof(error)) != STATICLM_OK) {
    std::fprintf(stderr, "staticlm: %s\n", error);
    return 1;
  }
  if (needed > capacity) {  // a report larger than the first guess: ask again with room
    capacity = needed;
    text.reset(new char[capacity]);
    staticlm_plan_report(o.model, &o.limits, json, text.get(), capacity, &needed, error,
                         sizeof(error));
  }
  std::fputs(text.get(), stdout);
  return 0;
}

}  // namespace

int PlanCommand(int argc, char** argv) {
  Options o;
  if (!ParseOptions(argc, argv, 2, &o)) return 2;
  if (o.output == nullptr && !o.print && !o.json) {
    std::fprintf(stderr, "staticlm: plan needs -o FILE, --print or --json\n");
    return 2;
  }
  if (o.output != nullptr) {
    char error[256];
    if (staticlm_save_plan(o.model, &o.limits, o.output, error, sizeof(error)) != STATICLM_OK) {
      std::fprintf(stderr, "staticlm: %s\n", error);
      return 1;
    }
    // The file records the CPU kernel choice (--isa): say which.
    char isa[128];
    const bool known =
        staticlm_cpu_isa(&o.limits, isa, sizeof(isa), error, sizeof(error)) == STATICLM_OK;
    std::fprintf(stderr, "[staticlm] wrote %s (cpu kernels: %s)\n", o.output, known ? isa : error);
  }
  if (o.print && PrintReport(o, 0) != 0) return 1;
  if (o.json && PrintReport(o, 1) != 0) return 1;
  return 0;
}

}  // namespace staticlm::cli
