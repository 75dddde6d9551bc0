// Command-line options of the staticlm tool, parsed from argv without exceptions.
#pragma once

#include <cstdint>

#include "staticlm/staticlm.h"

namespace staticlm::cli {

struct Options {
  const char* model = nullptr;   // default: the repository's models/ file
  const char* prompt = nullptr;  // the last --prompt
  // batch: every --prompt, in order
  static constexpr int kMaxPrompts = 256;
  const char* prompts[kMaxPrompts] = {};
  int n_prompts = 0;
  const char* system = nullptr;
  bool chat_template = false;         // --chat: wrap the prompt in the model's chat template
  const char* chat_format = nullptr;  // --chat-template NAME: force a format (implies --chat)
  bool json = false;
  bool print = false;                  // plan: print the op table
  const char* output = nullptr;        // plan: -o FILE
  const char* save_session = nullptr;  // run: --save-session FILE, written when the run ends
  const char* load_session = nullptr;  // run: --load-session FILE, continued from
  const char* prompt_ids = nullptr;    // run: --prompt-ids 1,2,3, fed as they are
  int32_t max_tokens = 128;
  uint64_t seed = 0;
  staticlm_limits limits;
  staticlm_sampler sampler;
};

// Fills `options` from argv[first..argc). Returns false after printing a one-line error for
// an unknown flag or a bad value.
bool ParseOptions(int argc, char** argv, int first, Options* options);

// The model path used when --model is not given.
const char* DefaultModelPath();

}  // namespace staticlm::cli
