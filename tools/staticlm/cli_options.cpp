#include "tools/staticlm/cli_options.h"

#include <cstdio>
#include <cstring>

#include "tools/staticlm/flag_values.h"

#ifndef STATICLM_DEFAULT_MODEL_PATH
#define STATICLM_DEFAULT_MODEL_PATH "models/SmolLM2-135M-Instruct.Q4_1.gguf"
#endif

namespace staticlm::cli {
namespace {

// Any int32 value; the command checks ranges that matter (limits, token counts) itself.
bool ParseAnyI32(const char* flag, const char* text, int32_t* out) {
  return ParseI32(flag, text, -2147483647LL, 2147483647LL, out);
}

// Flags that take a value; returns false on a bad value.
bool ParseValueFlag(const char* flag, const char* value, Options* o) {
  int64_t v = 0;
  if (!std::strcmp(flag, "--model")) {
    o->model = value;
    return true;
  }
  if (!std::strcmp(flag, "--prompt") || !std::strcmp(flag, "-p")) {
    o->prompt = value;
    if (o->n_prompts == Options::kMaxPrompts) {
      std::fprintf(stderr, "staticlm: more than %d prompts\n", Options::kMaxPrompts);
      return false;
    }
    o->prompts[o->n_prompts++] = value;
    return true;
  }
  if (!std::strcmp(flag, "--prompt-ids")) {
    o->prompt_ids = value;
    return true;
  }
  if (!std::strcmp(flag, "--system")) {
    o->system = value;
    return true;
  }
  if (!std::strcmp(flag, "--chat-template")) {
    o->chat_format = value;
    o->chat_template = true;
    return true;
  }
  if (!std::strcmp(flag, "--plan")) {
    o->limits.plan_path = value;
    return true;
  }
  if (!std::strcmp(flag, "--no-fuse")) {
    uint32_t pass = staticlm_fusion_pass(value);
    if (pass == 0) {
      std::fprintf(stderr,
                   "staticlm: --no-fuse expects norm, qkv, gate_up, residual or all, got '%s'\n",
                   value);
      return false;
    }
    o->limits.disabled_fusions |= pass;
    return true;
  }
  if (!std::strcmp(flag, "--save-session")) {
    o->save_session = value;
    return true;
  }
  if (!std::strcmp(flag, "--load-session")) {
    o->load_session = value;
    return true;
  }
  if (!std::strcmp(flag, "-o") || !std::strcmp(flag, "--output")) {
    o->output = value;
    return true;
  }
  if (!std::strcmp(flag, "--max-tokens") || !std::strcmp(flag, "-n"))
    return ParseAnyI32(flag, value, &o->max_tokens);
  if (!std::strcmp(flag, "--seed")) {
    if (!ParseInt(flag, value, 0, INT64_MAX, &v)) return false;
    o->seed = static_cast<uint64_t>(v);
    return true;
  }
  if (!std::strcmp(flag, "--ctx")) return ParseAnyI32(flag, value, &o->limits.max_context);
  if (!std::strcmp(flag, "--batch")) return ParseAnyI32(flag, value, &o->limits.max_batch);
  if (!std::strcmp(flag, "--chunk")) return ParseAnyI32(flag, value, &o->limits.prefill_chunk);
  if (!std::strcmp(flag, "--max-prompt-bytes"))
    return ParseAnyI32(flag, value, &o->limits.max_prompt_bytes);
  if (!std::strcmp(flag, "--threads") || !std::strcmp(flag, "-t"))
    return ParseAnyI32(flag, value, &o->limits.threads);
  if (!std::strcmp(flag, "--temperature")) return ParseFloat(flag, value, &o->sampler.temperature);
  if (!std::strcmp(flag, "--top-k")) return ParseAnyI32(flag, value, &o->sampler.top_k);
  if (!std::strcmp(flag, "--top-p")) return ParseFloat(flag, value, &o->sampler.top_p);
  if (!std::strcmp(flag, "--min-p")) return ParseFloat(flag, value, &o->sampler.min_p);
  if (!std::strcmp(flag, "--repeat-penalty"))
    return ParseFloat(flag, value, &o->sampler.repetition_penalty);
  if (!std::strcmp(flag, "--repeat-window"))
    return ParseAnyI32(flag, value, &o->sampler.repetition_window);
  std::fprintf(stderr, "staticlm: unknown option '%s' (see staticlm help)\n", flag);
  return false;
}

}  // namespace

const char* DefaultModelPath() {
  return STATICLM_DEFAULT_MODEL_PATH;
}

bool ParseOptions(int argc, char** argv, int first, Options* o) {
  staticlm_limits_default(&o->limits);
  staticlm_sampler_default(&o->sampler);
  o->model = DefaultModelPath();
  for (int i = first; i < argc; ++i) {
    const char* flag = argv[i];
    if (!std::strcmp(flag, "--chat")) {
      o->chat_template = true;
      continue;
    }
    if (!std::strcmp(flag, "--json")) {
      o->json = true;
      continue;
    }
    if (!std::strcmp(flag, "--print")) {
      o->print = true;
      continue;
    }
    if (ParseRunSwitch(flag, &o->limits)) continue;
    if (i + 1 >= argc) {
      std::fprintf(stderr, "staticlm: option '%s' needs a value or is unknown\n", flag);
      return false;
    }
    FlagResult shared = ParseLimitFlag(flag, argv[i + 1], &o->limits);
    if (shared == FlagResult::kBad) return false;
    if (shared == FlagResult::kParsed) {
      ++i;
      continue;
    }
    if (!ParseValueFlag(flag, argv[++i], o)) return false;
  }
  if (o->max_tokens < 0) {
    std::fprintf(stderr, "staticlm: --max-tokens must not be negative\n");
    return false;
  }
  return true;
}

}  // namespace staticlm::cli
