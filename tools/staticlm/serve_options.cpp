#include "tools/staticlm/serve_options.h"

#include <cstdio>
#include <cstring>

#include "tools/staticlm/cli_options.h"
#include "tools/staticlm/flag_values.h"

namespace staticlm::cli {
namespace {

bool ParseValueFlag(const char* flag, const char* value, ServeOptions* o) {
  staticlm_limits& l = o->limits;
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
  if (!std::strcmp(flag, "--threads") || !std::strcmp(flag, "-t"))
    return ParseI32(flag, value, 1, 256, &l.threads);
  if (!std::strcmp(flag, "--ctx")) return ParseI32(flag, value, 1, 1 << 24, &l.max_context);
  if (!std::strcmp(flag, "--chunk")) return ParseI32(flag, value, 1, 1 << 16, &l.prefill_chunk);
  if (!std::strcmp(flag, "--max-prompt-bytes"))
    return ParseI32(flag, value, 1, 1 << 26, &l.max_prompt_bytes);
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
