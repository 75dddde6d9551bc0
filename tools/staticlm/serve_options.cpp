#include "tools/staticlm/serve_options.h"

#include <cstdio>
#include <cstring>

#include "tools/staticlm/cli_options.h"
#include "tools/staticlm/flag_values.h"

namespace staticlm::cli {
namespace {

bool ParseValueFlag(const char* flag, const char* value, ServeOptions* o) {
  if (!std::strcmp(flag, "--model")) {
    o->model = value;
    return true;
  }
  if (!std::strcmp(flag, "--host")) {
    o->host = value;
    return true;
  }
  if (!std::strcmp(flag, "--chat-template")) {
    o->chat_format = value;
    return true;
  }
  if (!std::strcmp(flag, "--port")) return ParseI32(flag, value, 0, 65535, &o->port);
  if (!std::strcmp(flag, "--sessions")) return ParseI32(flag, value, 1, 256, &o->sessions);
  if (!std::strcmp(flag, "--max-tokens")) return ParseI32(flag, value, 1, 1 << 16, &o->max_tokens);
  FlagResult size = ParseSizeFlag(flag, value, &o->limits);
  if (size != FlagResult::kNotMine) return size == FlagResult::kParsed;
  std::fprintf(stderr, "staticlm: unknown serve option '%s' (see staticlm help)\n", flag);
  return false;
}

}  // namespace

bool ParseServeOptions(int argc, char** argv, int first, ServeOptions* o) {
  staticlm_limits_default(&o->limits);
  o->model = DefaultModelPath();
  return ParseCommandFlags(argc, argv, first, &o->limits, [o](const char* flag, const char* value) {
    return ParseValueFlag(flag, value, o);
  });
}

}  // namespace staticlm::cli
