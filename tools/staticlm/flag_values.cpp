#include "tools/staticlm/flag_values.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace staticlm::cli {

bool ParseInt(const char* flag, const char* text, int64_t min, int64_t max, int64_t* out) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < min || v > max) {
    std::fprintf(stderr, "staticlm: %s expects an integer in [%lld, %lld], got '%s'\n", flag,
                 static_cast<long long>(min), static_cast<long long>(max), text);
    return false;
  }
  *out = v;
  return true;
}

bool ParseI32(const char* flag, const char* text, int64_t min, int64_t max, int32_t* out) {
  int64_t v = 0;
  if (!ParseInt(flag, text, min, max, &v)) return false;
  *out = static_cast<int32_t>(v);
  return true;
}

bool ParseTokenIds(const char* flag, const char* text, int32_t vocab_size, int32_t* out,
                   size_t capacity, size_t* n) {
  *n = 0;
  const char* p = text;
  for (;;) {
    while (*p == ' ') ++p;
    const char* start = p;
    while (*p >= '0' && *p <= '9') ++p;
    const int len = static_cast<int>(p - start);
    while (*p == ' ') ++p;
    if (len == 0 || (*p != ',' && *p != '\0')) {
      const char* bad_end = std::strchr(start, ',');
      const int bad_len =
          bad_end ? static_cast<int>(bad_end - start) : static_cast<int>(std::strlen(start));
      std::fprintf(stderr, "staticlm: %s expects comma-separated token ids, got '%.*s'\n", flag,
                   bad_len > 40 ? 40 : bad_len, start);
      return false;
    }
    errno = 0;
    const long long id = std::strtoll(start, nullptr, 10);
    if (errno != 0 || id >= vocab_size) {
      std::fprintf(stderr, "staticlm: %s: token id %.*s is out of range (the vocabulary has %d)\n",
                   flag, len > 40 ? 40 : len, start, vocab_size);
      return false;
    }
    if (*n == capacity) {
      std::fprintf(stderr, "staticlm: %s: more than %zu token ids\n", flag, capacity);
      return false;
    }
    out[(*n)++] = static_cast<int32_t>(id);
    if (*p == '\0') return true;
    ++p;  // the comma
  }
}

bool ParseFloat(const char* flag, const char* text, float* out) {
  char* end = nullptr;
  errno = 0;
  float v = std::strtof(text, &end);
  if (errno != 0 || end == text || *end != '\0' || !std::isfinite(v)) {
    std::fprintf(stderr, "staticlm: %s expects a number, got '%s'\n", flag, text);
    return false;
  }
  *out = v;
  return true;
}

bool ParseKv(const char* text, staticlm_kv_type* out) {
  if (std::strcmp(text, "f16") == 0) {
    *out = STATICLM_KV_F16;
  } else if (std::strcmp(text, "f32") == 0) {
    *out = STATICLM_KV_F32;
  } else if (std::strcmp(text, "q8") == 0) {
    *out = STATICLM_KV_Q8;
  } else if (std::strcmp(text, "q4") == 0) {
    *out = STATICLM_KV_Q4;
  } else {
    std::fprintf(stderr, "staticlm: --kv expects f16, f32, q8 or q4, got '%s'\n", text);
    return false;
  }
  return true;
}

bool ParseActivations(const char* text, int32_t* bits) {
  if (std::strcmp(text, "f32") == 0) {
    *bits = 0;
  } else if (std::strcmp(text, "int16") == 0) {
    *bits = 16;
  } else if (std::strcmp(text, "int8") == 0) {
    *bits = 8;
  } else {
    std::fprintf(stderr, "staticlm: --activations expects f32, int16 or int8, got '%s'\n", text);
    return false;
  }
  return true;
}

// Whether the CPU has the ISA is the backend's to say, at init.
static bool ParseIsa(const char* text, const char** isa) {
  static const char* const kNames[] = {"auto", "avx512", "avx2", "neon", "scalar"};
  for (const char* name : kNames) {
    if (std::strcmp(text, name) == 0) {
      *isa = text;
      return true;
    }
  }
  std::fprintf(stderr, "staticlm: --isa expects auto, avx512, avx2, neon or scalar, got '%s'\n",
               text);
  return false;
}

bool ParseRunSwitch(const char* flag, staticlm_limits* limits) {
  if (std::strcmp(flag, "--reference") == 0) {
    limits->reference_kernels = 1;
  } else if (std::strcmp(flag, "--busy-wait") == 0) {
    limits->busy_wait = 1;
  } else if (std::strcmp(flag, "--pin") == 0) {
    limits->pin_threads = 1;
  } else if (std::strcmp(flag, "--lock") == 0) {
    limits->lock_memory = 1;
  } else if (std::strcmp(flag, "--small-pages") == 0) {
    limits->huge_pages = 0;
  } else {
    return false;
  }
  return true;
}

const char* KvName(staticlm_kv_type type) {
  switch (type) {
    case STATICLM_KV_F16:
      return "f16";
    case STATICLM_KV_F32:
      return "f32";
    case STATICLM_KV_Q8:
      return "q8";
    case STATICLM_KV_Q4:
      return "q4";
  }
  return "?";
}

FlagResult ParseSizeFlag(const char* flag, const char* value, staticlm_limits* l) {
  bool ok = false;
  if (!std::strcmp(flag, "--threads") || !std::strcmp(flag, "-t")) {
    ok = ParseI32(flag, value, 1, 256, &l->threads);
  } else if (!std::strcmp(flag, "--ctx")) {
    ok = ParseI32(flag, value, 1, 1 << 24, &l->max_context);
  } else if (!std::strcmp(flag, "--chunk")) {
    ok = ParseI32(flag, value, 1, 1 << 16, &l->prefill_chunk);
  } else if (!std::strcmp(flag, "--max-prompt-bytes")) {
    ok = ParseI32(flag, value, 1, 1 << 26, &l->max_prompt_bytes);
  } else {
    return FlagResult::kNotMine;
  }
  return ok ? FlagResult::kParsed : FlagResult::kBad;
}

FlagResult ParseLimitFlag(const char* flag, const char* value, staticlm_limits* limits) {
  bool ok = true;
  if (std::strcmp(flag, "--kv") == 0) {
    ok = ParseKv(value, &limits->kv_type);
  } else if (std::strcmp(flag, "--backend") == 0) {
    ok = std::strcmp(value, "cpu") == 0 || std::strcmp(value, "vulkan") == 0 ||
         std::strcmp(value, "cuda") == 0 || std::strcmp(value, "auto") == 0;
    if (!ok) {
      std::fprintf(stderr, "staticlm: --backend expects cpu, vulkan, cuda or auto, got '%s'\n",
                   value);
    }
    limits->backend = value;
  } else if (std::strcmp(flag, "--device") == 0) {
    ok = ParseI32(flag, value, 0, 64, &limits->device);
  } else if (std::strcmp(flag, "--pipeline-cache") == 0) {
    limits->pipeline_cache_path = value;
  } else if (std::strcmp(flag, "--window") == 0) {
    if (std::strcmp(value, "model") == 0) {
      limits->window = STATICLM_WINDOW_FROM_MODEL;
    } else {
      ok = ParseI32(flag, value, 1, 1 << 24, &limits->window);
    }
  } else if (std::strcmp(flag, "--global-every") == 0) {
    ok = ParseI32(flag, value, 0, 1 << 24, &limits->global_every);
  } else if (std::strcmp(flag, "--activations") == 0) {
    ok = ParseActivations(value, &limits->activation_bits);
  } else if (std::strcmp(flag, "--quantize") == 0) {
    // Checked against the model at load (a GGUF file refuses it; a folder knows the types).
    limits->quantize = value;
  } else if (std::strcmp(flag, "--isa") == 0) {
    ok = ParseIsa(value, &limits->isa);
  } else if (std::strcmp(flag, "--sinks") == 0) {
    ok = ParseI32(flag, value, 1, 1 << 24, &limits->sinks);
  } else {
    return FlagResult::kNotMine;
  }
  return ok ? FlagResult::kParsed : FlagResult::kBad;
}

}  // namespace staticlm::cli
