// `staticlm chat`: interactive multi-turn chat. The KV cache is kept between turns, so each
// turn prefills only its own new tokens. Lines starting with '/' are commands: /reset, /quit.
// With --system, in a format where the system message is a turn of its own (ChatML), the
// system prompt is prefilled once and snapshotted; /reset restores that snapshot instead of
// prefilling it again. Where it joins the first user turn (Gemma), it is rendered with the
// first turn of every conversation instead.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>

#include "platform/alloc_counter.h"
#include "tools/staticlm/cli_options.h"
#include "tools/staticlm/commands.h"
#include "tools/staticlm/generation.h"
#include "tools/staticlm/heap_counts.h"

namespace staticlm::cli {
namespace {

struct ChatBuffers {
  std::unique_ptr<char[]> line;
  std::unique_ptr<char[]> text;
  std::unique_ptr<int32_t[]> tokens;
  std::unique_ptr<int32_t[]> generated;
  size_t capacity = 0;
  int32_t start_position = 0;  // where a conversation starts: 0, or after the system prompt
  staticlm_chat_format_info chat = {};
  bool system_snapshot = false;  // the system prompt is prefilled and in snapshot kSystemSlot
};

constexpr int32_t kSystemSlot = 0;

// --system: prefills the system prompt alone and snapshots it, so every conversation starts
// by restoring it.
staticlm_status PrefillSystemPrompt(staticlm_context* ctx, const Options& o, ChatBuffers* b) {
  staticlm_chat_message system = {"system", o.system};
  size_t n_text = 0, n_tokens = 0;
  staticlm_status s =
      staticlm_format_chat(ctx, &system, 1, 0, 0, b->text.get(), b->capacity, &n_text);
  // A continuation turn starts with the newline that ends the turn before it.
  if (s == STATICLM_OK && n_text > 0 && b->text[n_text - 1] == '\n') --n_text;
  if (s == STATICLM_OK) {
    s = staticlm_tokenize(ctx, b->text.get(), n_text, 1, b->tokens.get(), b->capacity, &n_tokens);
  }
  if (s == STATICLM_OK) s = staticlm_prefill(ctx, b->tokens.get(), n_tokens);
  if (s == STATICLM_OK) s = staticlm_snapshot_save(ctx, kSystemSlot);
  if (s == STATICLM_OK) {
    b->start_position = staticlm_position(ctx);
    std::fprintf(stderr, "[staticlm] system prompt: %zu tokens, snapshotted\n", n_tokens);
  }
  return s;
}

// Renders one user turn: the whole conversation start on the first turn, a continuation after.
staticlm_status RenderTurn(staticlm_context* ctx, const Options& o, const char* user,
                           ChatBuffers* b, size_t* n) {
  staticlm_chat_message messages[2];
  size_t count = 0;
  // The conversation's start is rendered whole (with the template's default system message)
  // unless a system prompt is already in the cache.
  bool first = staticlm_position(ctx) == 0;
  bool fresh = staticlm_position(ctx) == b->start_position;
  if (first && o.system != nullptr) messages[count++] = {"system", o.system};
  messages[count++] = {"user", user};
  size_t prefix = 0;
  // The end of the previous assistant turn: its end-of-turn token was sampled but never
  // decoded, so the next turn's text starts by closing the turn; the continuation that
  // follows begins with what the template puts after it.
  if (!fresh) {
    prefix = std::strlen(b->chat.end_of_turn);
    if (prefix > b->capacity) return STATICLM_INVALID_ARGUMENT;
    std::memcpy(b->text.get(), b->chat.end_of_turn, prefix);
  }
  size_t rendered = 0;
  staticlm_status s = staticlm_format_chat(ctx, messages, count, 1, first ? 0 : 1,
                                           b->text.get() + prefix, b->capacity - prefix, &rendered);
  *n = prefix + rendered;
  return s;
}

// Reads one line from stdin into b->line without its newline; false at end of input.
bool ReadLine(ChatBuffers* b) {
  if (std::fgets(b->line.get(), static_cast<int>(b->capacity), stdin) == nullptr) return false;
  size_t n = std::strlen(b->line.get());
  while (n > 0 && (b->line[n - 1] == '\n' || b->line[n - 1] == '\r')) b->line[--n] = '\0';
  return true;
}

void RunTurn(staticlm_context* ctx, const Options& o, ChatBuffers* b, int turn) {
  size_t n_text = 0, n_tokens = 0;
  staticlm_status s = RenderTurn(ctx, o, b->line.get(), b, &n_text);
  if (s == STATICLM_OK) {
    s = staticlm_tokenize(ctx, b->text.get(), n_text, 1, b->tokens.get(), b->capacity, &n_tokens);
  }
  GenerationStats st;
  if (s == STATICLM_OK) {
    s = Generate(ctx, b->tokens.get(), n_tokens, o.sampler, o.max_tokens, b->generated.get(),
                 StdoutOutput(), &st);
  }
  std::fputs("\n", stdout);
  std::fflush(stdout);
  if (s == STATICLM_CONTEXT_FULL || st.context_full) {
    std::fprintf(stderr,
                 "[staticlm] the context is full: /reset to start over (--sinks 4 --window W "
                 "keeps a conversation going in constant memory)\n");
    return;
  }
  if (s != STATICLM_OK) {
    std::fprintf(stderr, "staticlm: %s\n", staticlm_last_error(ctx));
    return;
  }
  double decode = st.decode_seconds > 0 ? st.decode_steps / st.decode_seconds : 0;
  std::fprintf(stderr,
               "[staticlm] turn %d: prefilled %zu tokens, generated %zu, decode %.1f tok/s, "
               "position %d\n",
               turn, st.prompt_tokens, st.generated_tokens, decode, staticlm_position(ctx));
}

}  // namespace

int ChatCommand(int argc, char** argv) {
  Options o;
  if (!ParseOptions(argc, argv, 2, &o)) return 2;
  if (o.save_session != nullptr || o.load_session != nullptr) {
    std::fprintf(stderr, "staticlm: --save-session and --load-session are options of run\n");
    return 2;
  }
  if (o.system != nullptr && o.limits.max_snapshots < 1) o.limits.max_snapshots = 1;
  staticlm_context* ctx = CreateContextOrReport(o.model, o.limits);
  if (ctx == nullptr) return 1;
  ChatBuffers b;
  if (!ChatFormatOrReport(ctx, o.chat_format, &b.chat)) {
    staticlm_destroy(ctx);
    return 1;
  }
  b.system_snapshot = o.system != nullptr && b.chat.system_turn != 0;
  b.capacity = static_cast<size_t>(o.limits.max_prompt_bytes);
  b.line.reset(new char[b.capacity]);
  b.text.reset(new char[b.capacity]);
  b.tokens.reset(new int32_t[b.capacity]);
  b.generated.reset(new int32_t[static_cast<size_t>(o.max_tokens) + 1]);
  staticlm_seed(ctx, o.seed);
  bool interactive = isatty(STDIN_FILENO);

  alloc_counter::Start();
  if (b.system_snapshot && PrefillSystemPrompt(ctx, o, &b) != STATICLM_OK) {
    std::fprintf(stderr, "staticlm: %s\n", staticlm_last_error(ctx));
    staticlm_destroy(ctx);
    return 1;
  }
  int turn = 0;
  while (true) {
    if (interactive) std::fputs("> ", stderr);
    if (!ReadLine(&b)) break;
    if (!std::strcmp(b.line.get(), "/quit")) break;
    if (!std::strcmp(b.line.get(), "/reset")) {
      if (b.system_snapshot) {
        staticlm_snapshot_restore(ctx, kSystemSlot);
        std::fprintf(stderr, "[staticlm] conversation reset (system prompt restored)\n");
      } else {
        staticlm_reset(ctx);
        std::fprintf(stderr, "[staticlm] conversation reset\n");
      }
      continue;
    }
    if (b.line[0] == '\0') continue;
    RunTurn(ctx, o, &b, ++turn);
  }
  alloc_counter::Stop();
  if (alloc_counter::Available()) {
    std::fputs("[staticlm]", stderr);
    PrintHeapCounts(stderr, ReadHeapCounts());
    std::fputc('\n', stderr);
  }
  staticlm_destroy(ctx);
  return 0;
}

}  // namespace staticlm::cli
