#include "tools/staticlm/generation.h"

#include <cstdio>

#include "platform/clock.h"

namespace staticlm::cli {
namespace {

void WriteStdout(void*, const char* text, size_t bytes) {
  std::fwrite(text, 1, bytes, stdout);
  std::fflush(stdout);
}

}  // namespace

TextOutput StdoutOutput() {
  return TextOutput{WriteStdout, nullptr};
}

staticlm_context* CreateContextOrReport(const char* model, const staticlm_limits& limits) {
  staticlm_context* ctx = nullptr;
  char error[256];
  if (staticlm_create(model, &limits, &ctx, error, sizeof(error)) != STATICLM_OK) {
    std::fprintf(stderr, "staticlm: %s\n", error);
    return nullptr;
  }
  if (staticlm_init_notes(ctx)[0] != '\0') {
    std::fprintf(stderr, "staticlm: note: %s\n", staticlm_init_notes(ctx));
  }
  return ctx;
}

bool ChatFormatOrReport(staticlm_context* ctx, const char* forced,
                        staticlm_chat_format_info* info) {
  staticlm_status s = forced != nullptr ? staticlm_set_chat_format(ctx, forced) : STATICLM_OK;
  if (s != STATICLM_OK) {  // an unknown name: say which flag gave it
    std::fprintf(stderr, "staticlm: --chat-template %s: %s\n", forced, staticlm_last_error(ctx));
    return false;
  }
  s = staticlm_chat_format(ctx, info);
  if (s != STATICLM_OK) std::fprintf(stderr, "staticlm: %s\n", staticlm_last_error(ctx));
  return s == STATICLM_OK;
}

staticlm_status Generate(staticlm_context* ctx, const int32_t* prompt, size_t n_prompt,
                         const staticlm_sampler& sampler, int32_t max_tokens, int32_t* generated,
                         TextOutput output, GenerationStats* stats, bool flush_text) {
  *stats = GenerationStats{};
  stats->prompt_tokens = n_prompt;
  double start = NowSeconds();
  staticlm_status s = n_prompt > 0 ? staticlm_prefill(ctx, prompt, n_prompt) : STATICLM_OK;
  stats->prefill_seconds = NowSeconds() - start;
  if (s != STATICLM_OK) return s;

  char piece[256];
  double decode_start = NowSeconds();
  for (int32_t i = 0; i < max_tokens; ++i) {
    if (output.cancel != nullptr && output.cancel->load(std::memory_order_relaxed)) break;
    int32_t token = 0;
    s = staticlm_sample(ctx, &sampler, &token);
    if (s != STATICLM_OK) return s;
    if (staticlm_is_end_of_generation(ctx, token)) {
      stats->ended = true;
      break;
    }
    generated[stats->generated_tokens++] = token;
    size_t n = 0;
    s = staticlm_token_to_text(ctx, token, piece, sizeof(piece), &n);
    if (s != STATICLM_OK) return s;
    if (n > 0) output.write(output.user, piece, n);
    // The last token's logits are not needed: stop before decoding it.
    if (i + 1 == max_tokens) break;
    if (stats->decode_steps == 0) decode_start = NowSeconds();
    s = staticlm_decode(ctx, token);
    if (s == STATICLM_CONTEXT_FULL) {
      stats->context_full = true;
      break;
    }
    if (s != STATICLM_OK) return s;
    ++stats->decode_steps;
  }
  if (stats->decode_steps > 0) stats->decode_seconds = NowSeconds() - decode_start;
  size_t n = flush_text ? staticlm_flush_text(ctx, piece, sizeof(piece)) : 0;
  if (n > 0) output.write(output.user, piece, n);
  return STATICLM_OK;
}

}  // namespace staticlm::cli
