#include <cstdio>
#include <cstring>

#include "tools/staticlm/cli_options.h"
#include "tools/staticlm/flag_values.h"
#include "tools/staticlm/soak.h"

namespace staticlm::cli {
namespace {

constexpr int64_t kMaxSoakTokens = int64_t{1} << 32;

bool ParseValueFlag(const char* flag, const char* value, SoakOptions* o) {
  if (!std::strcmp(flag, "--model")) {
    o->model = value;
    return true;
  }
  if (!std::strcmp(flag, "--prompt")) {
    o->prompt = value;
    return true;
  }
  if (!std::strcmp(flag, "--json")) {
    o->json_path = value;
    return true;
  }
  if (!std::strcmp(flag, "--plot")) {
    o->plot_path = value;
    return true;
  }
  if (!std::strcmp(flag, "--tokens")) return ParseInt(flag, value, 1, kMaxSoakTokens, &o->tokens);
  if (!std::strcmp(flag, "--every")) return ParseI32(flag, value, 10, 1 << 20, &o->every);
  if (!std::strcmp(flag, "--warmup")) return ParseInt(flag, value, 0, kMaxSoakTokens, &o->warmup);
  if (!std::strcmp(flag, "--seed")) {
    int64_t seed = 0;
    if (!ParseInt(flag, value, 0, INT64_MAX, &seed)) return false;
    o->seed = static_cast<uint64_t>(seed);
    return true;
  }
  FlagResult size = ParseSizeFlag(flag, value, &o->limits);
  if (size != FlagResult::kNotMine) return size == FlagResult::kParsed;
  std::fprintf(stderr, "staticlm: unknown soak option '%s' (see staticlm help)\n", flag);
  return false;
}

}  // namespace

bool ParseSoakOptions(int argc, char** argv, int first, SoakOptions* o) {
  staticlm_limits_default(&o->limits);
  o->model = DefaultModelPath();
  return ParseCommandFlags(argc, argv, first, &o->limits, [o](const char* flag, const char* value) {
    return ParseValueFlag(flag, value, o);
  });
}

}  // namespace staticlm::cli
