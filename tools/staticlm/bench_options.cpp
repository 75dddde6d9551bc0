#include "tools/staticlm/bench_options.h"

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tools/staticlm/cli_options.h"
#include "tools/staticlm/flag_values.h"

namespace staticlm::cli {
namespace {

constexpr int64_t kMaxTokens = int64_t{1} << 24;
constexpr size_t kMaxDepths = 32;

// "0,512,2048": distinct non-negative integers.
bool ParseDepths(const char* text, std::vector<int32_t>* depths) {
  depths->clear();
  const char* p = text;
  while (true) {
    const char* comma = std::strchr(p, ',');
    size_t length = comma != nullptr ? static_cast<size_t>(comma - p) : std::strlen(p);
    char item[32];
    if (length == 0 || length >= sizeof(item)) {
      std::fprintf(stderr, "staticlm: --depths expects integers separated by commas, got '%s'\n",
                   text);
      return false;
    }
    std::memcpy(item, p, length);
    item[length] = '\0';
    int32_t depth = 0;
    if (!ParseI32("--depths", item, 0, kMaxTokens, &depth)) return false;
    for (int32_t d : *depths) {
      if (d == depth) {
        std::fprintf(stderr, "staticlm: --depths lists %d twice\n", depth);
        return false;
      }
    }
    if (depths->size() == kMaxDepths) {
      std::fprintf(stderr, "staticlm: --depths takes at most %zu depths\n", kMaxDepths);
      return false;
    }
    depths->push_back(depth);
    if (comma == nullptr) return true;
    p = comma + 1;
  }
}

// Flags that take a value; returns false on an unknown flag or a bad value.
bool ParseValueFlag(const char* flag, const char* value, BenchOptions* o) {
  staticlm_limits& l = o->limits;
  if (!std::strcmp(flag, "--model")) {
    o->model = value;
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
  if (!std::strcmp(flag, "--prompt-tokens"))
    return ParseI32(flag, value, 1, kMaxTokens, &o->prompt_tokens);
  if (!std::strcmp(flag, "--gen-tokens"))
    return ParseI32(flag, value, 1, kMaxTokens, &o->gen_tokens);
  if (!std::strcmp(flag, "--depths")) return ParseDepths(value, &o->depths);
  if (!std::strcmp(flag, "--reps")) return ParseI32(flag, value, 1, 1000, &o->reps);
  if (!std::strcmp(flag, "--warmup")) return ParseI32(flag, value, 0, 100, &o->warmup);
  if (!std::strcmp(flag, "--threads") || !std::strcmp(flag, "-t"))
    return ParseI32(flag, value, 1, 256, &l.threads);
  if (!std::strcmp(flag, "--chunk")) {
    o->chunk_given = true;
    return ParseI32(flag, value, 1, 1 << 16, &l.prefill_chunk);
  }
  if (!std::strcmp(flag, "--plan")) {  // load plans (made by staticlm plan -o): measures startup
    l.plan_path = value;
    return true;
  }
  if (!std::strcmp(flag, "--probe-mib")) return ParseInt(flag, value, 0, 1 << 16, &o->probe_mib);
  if (!std::strcmp(flag, "--ctx")) {
    o->ctx_given = true;
    return ParseI32(flag, value, 1, kMaxTokens, &l.max_context);
  }
  std::fprintf(stderr, "staticlm: unknown bench option '%s' (see staticlm help)\n", flag);
  return false;
}

}  // namespace

bool ParseBenchOptions(int argc, char** argv, int first, BenchOptions* o) {
  staticlm_limits_default(&o->limits);
  o->model = DefaultModelPath();
  // bench's own switch: --op-profile times every op of the decode steps
  // (staticlm_limits.profile_ops).
  auto own_switch = [o](const char* flag) {
    if (std::strcmp(flag, "--op-profile") != 0) return false;
    o->limits.profile_ops = 1;
    return true;
  };
  return ParseCommandFlags(
      argc, argv, first, &o->limits, own_switch,
      [o](const char* flag, const char* value) { return ParseValueFlag(flag, value, o); });
}

int64_t BenchTokensNeeded(const BenchOptions& o) {
  int64_t needed = o.prompt_tokens;
  for (int32_t d : o.depths) {
    int64_t n = static_cast<int64_t>(d) + o.gen_tokens;
    needed = n > needed ? n : needed;
  }
  return needed;
}

bool ResolveBenchContext(int32_t model_context, BenchOptions* o) {
  const int64_t needed = BenchTokensNeeded(*o);
  int32_t deepest = 0;
  for (int32_t d : o->depths) deepest = d > deepest ? d : deepest;
  if (o->ctx_given && needed > o->limits.max_context) {
    std::fprintf(stderr,
                 "staticlm: the measurement needs %lld cache positions (prompt %d; depth %d + %d "
                 "generated tokens), more than --ctx %d\n",
                 static_cast<long long>(needed), o->prompt_tokens, deepest, o->gen_tokens,
                 o->limits.max_context);
    return false;
  }
  if (model_context > 0 && needed > model_context) {
    std::fprintf(stderr,
                 "staticlm: the measurement needs %lld cache positions (prompt %d; depth %d + %d "
                 "generated tokens), more than the model's context %d\n",
                 static_cast<long long>(needed), o->prompt_tokens, deepest, o->gen_tokens,
                 model_context);
    return false;
  }
  if (!o->ctx_given) {
    int64_t ctx = needed > 2048 ? needed : 2048;
    if (model_context > 0 && ctx > model_context) ctx = model_context;
    o->limits.max_context = static_cast<int32_t>(ctx);
  }
  if (!o->chunk_given && o->limits.prefill_chunk > o->limits.max_context) {
    o->limits.prefill_chunk = o->limits.max_context;
  }
  return true;
}

}  // namespace staticlm::cli
