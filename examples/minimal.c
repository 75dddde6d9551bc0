/* A minimal C program embedding staticlm: load a model, render a chat prompt, generate
 * greedily and stream the text. Everything is sized at staticlm_create; the loop below makes
 * no allocation, neither here nor inside the library.
 *
 *   minimal MODEL.gguf "Your question"
 */
#include <stdio.h>
#include <string.h>

#include "staticlm/staticlm.h"

enum { kMaxPromptBytes = 4096, kMaxNewTokens = 48 };

static char prompt_text[kMaxPromptBytes];
static int32_t prompt_tokens[kMaxPromptBytes];

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s MODEL.gguf PROMPT\n", argv[0]);
    return 2;
  }
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.max_context = 512;
  limits.max_prompt_bytes = kMaxPromptBytes;

  char error[256];
  staticlm_context* ctx = NULL;
  if (staticlm_create(argv[1], &limits, &ctx, error, sizeof(error)) != STATICLM_OK) {
    fprintf(stderr, "minimal: %s\n", error);
    return 1;
  }

  staticlm_chat_message user = {"user", argv[2]};
  size_t text_bytes = 0, n_tokens = 0;
  if (staticlm_format_chat(ctx, &user, 1, 1, 0, prompt_text, sizeof(prompt_text), &text_bytes) !=
          STATICLM_OK ||
      staticlm_tokenize(ctx, prompt_text, text_bytes, 1, prompt_tokens, kMaxPromptBytes,
                        &n_tokens) != STATICLM_OK ||
      staticlm_prefill(ctx, prompt_tokens, n_tokens) != STATICLM_OK) {
    fprintf(stderr, "minimal: %s\n", staticlm_last_error(ctx));
    staticlm_destroy(ctx);
    return 1;
  }

  staticlm_sampler greedy;
  staticlm_sampler_default(&greedy);
  greedy.temperature = 0.0f;
  char piece[128];
  for (int i = 0; i < kMaxNewTokens; ++i) {
    int32_t token = 0;
    size_t n = 0;
    if (staticlm_sample(ctx, &greedy, &token) != STATICLM_OK) break;
    if (staticlm_is_end_of_generation(ctx, token)) break;
    if (staticlm_token_to_text(ctx, token, piece, sizeof(piece), &n) == STATICLM_OK) {
      fwrite(piece, 1, n, stdout);
      fflush(stdout);
    }
    if (staticlm_decode(ctx, token) != STATICLM_OK) break;
  }
  size_t n = staticlm_flush_text(ctx, piece, sizeof(piece));
  fwrite(piece, 1, n, stdout);
  fputc('\n', stdout);
  staticlm_destroy(ctx);
  return 0;
}
