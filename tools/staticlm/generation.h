// The generation loop shared by `run` and `chat`: prefill a prompt, then sample, stream and
// decode until an end-of-generation token or the token budget. Uses only the C API and the
// buffers it is given, so it allocates nothing.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "staticlm/staticlm.h"

namespace staticlm::cli {

// Receives streamed text: complete UTF-8 characters only.
struct TextOutput {
  void (*write)(void* user, const char* text, size_t bytes);
  void* user;
  // When set and true, Generate stops before the next token (serve: the client went away).
  const std::atomic<bool>* cancel = nullptr;
};

// A TextOutput that writes to stdout and flushes, so text streams as it is generated.
TextOutput StdoutOutput();

// Init: creates the context the options describe, or prints one line `staticlm: …` and
// returns null.
staticlm_context* CreateContextOrReport(const char* model, const staticlm_limits& limits);

// Init, for --chat and chat: forces the chat format `forced` when not null (--chat-template),
// then describes the context's format into `info`. On failure (an unknown name, or a model
// without a usable template) prints one line `staticlm: …` and returns false.
bool ChatFormatOrReport(staticlm_context* ctx, const char* forced, staticlm_chat_format_info* info);

struct GenerationStats {
  size_t prompt_tokens = 0;
  size_t generated_tokens = 0;
  double prefill_seconds = 0;
  size_t decode_steps = 0;    // tokens decoded after the prompt (each one step)
  double decode_seconds = 0;  // from the first decode step to the end of the loop
  bool ended = false;         // stopped on an end-of-generation token (not emitted)
  bool context_full = false;  // stopped because the cache is full
};

// Prefills `prompt`, then generates up to `max_tokens` tokens into `generated` (capacity
// ≥ max_tokens). The end-of-generation token, if sampled, is neither decoded nor emitted.
// With n_prompt 0 it samples from the logits the context already has (a loaded session).
// With `flush_text` false, an incomplete trailing character stays held in the context (to be
// saved with a session) instead of being written out as U+FFFD.
staticlm_status Generate(staticlm_context* ctx, const int32_t* prompt, size_t n_prompt,
                         const staticlm_sampler& sampler, int32_t max_tokens, int32_t* generated,
                         TextOutput output, GenerationStats* stats, bool flush_text = true);

}  // namespace staticlm::cli
