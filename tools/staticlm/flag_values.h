// Parsers of command-line flag values shared by the staticlm commands. Each prints one line
// `staticlm: …` naming the flag and returns false for a bad value.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>

#include "staticlm/staticlm.h"

namespace staticlm::cli {

bool ParseInt(const char* flag, const char* text, int64_t min, int64_t max, int64_t* out);
bool ParseI32(const char* flag, const char* text, int64_t min, int64_t max, int32_t* out);
bool ParseFloat(const char* flag, const char* text, float* out);
// A comma-separated list of token ids below `vocab_size` ("1,2,3"; spaces allowed after a
// comma) into out[0 .. *n), at most `capacity`. False after a one-line error naming `flag`
// and the bad entry (not a number, negative, out of range, empty, too many).
bool ParseTokenIds(const char* flag, const char* text, int32_t vocab_size, int32_t* out,
                   size_t capacity, size_t* n);
bool ParseKv(const char* text, staticlm_kv_type* out);
// --activations f32|int16|int8 → staticlm_limits.activation_bits 0, 16, 8.
bool ParseActivations(const char* text, int32_t* bits);

// The switches every command that creates a context takes (--reference, --busy-wait, --pin,
// --lock):
// sets the matching field of `limits` and returns true, or returns false for another flag.
bool ParseRunSwitch(const char* flag, staticlm_limits* limits);

// The name --kv takes for `type` ("f16", "f32", "q8", "q4").
const char* KvName(staticlm_kv_type type);

enum class FlagResult { kParsed, kBad, kNotMine };
// The valued flags that shape a context, shared by every command: --kv, --backend, --device,
// --window, --sinks. kBad after printing a one-line error; kNotMine for another flag.
FlagResult ParseLimitFlag(const char* flag, const char* value, staticlm_limits* limits);

// The sizes of a context a command with flags of its own takes (soak, serve): --threads (-t),
// --ctx, --chunk, --max-prompt-bytes. kBad after a one-line error; kNotMine for another flag.
FlagResult ParseSizeFlag(const char* flag, const char* value, staticlm_limits* limits);

// The argv loop of a command with flags of its own (bench, soak, serve): argv[first..argc)
// through ParseRunSwitch and ParseLimitFlag into `limits`; the command's own switches (flags
// without a value) to `own_switch(flag)`, which returns whether the flag is one; and every other
// flag with its value to `own(flag, value)`, which returns false after printing one line for a
// flag it does not know. False after one line for a stray argument or a flag without a value.
template <typename OwnSwitch, typename Own>
bool ParseCommandFlags(int argc, char** argv, int first, staticlm_limits* limits,
                       OwnSwitch&& own_switch, Own&& own) {
  for (int i = first; i < argc; ++i) {
    const char* flag = argv[i];
    if (ParseRunSwitch(flag, limits) || own_switch(flag)) continue;
    if (std::strncmp(flag, "-", 1) != 0) {
      std::fprintf(stderr, "staticlm: unexpected argument '%s' (see staticlm help)\n", flag);
      return false;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "staticlm: option '%s' needs a value or is unknown\n", flag);
      return false;
    }
    FlagResult shared = ParseLimitFlag(flag, argv[i + 1], limits);
    if (shared == FlagResult::kBad) return false;
    if (shared == FlagResult::kNotMine && !own(flag, argv[i + 1])) return false;
    ++i;
  }
  return true;
}

// The same for a command without switches of its own.
template <typename Own>
bool ParseCommandFlags(int argc, char** argv, int first, staticlm_limits* limits, Own&& own) {
  return ParseCommandFlags(
      argc, argv, first, limits, [](const char*) { return false; }, own);
}

}  // namespace staticlm::cli
