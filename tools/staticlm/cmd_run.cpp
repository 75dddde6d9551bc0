// `staticlm run`: one prompt in, streamed text out, then a line of figures (or one JSON object).
#include <cstdio>
#include <cstring>
#include <memory>

#include "platform/alloc_counter.h"
#include "platform/process_stats.h"
#include "tools/staticlm/cli_options.h"
#include "tools/staticlm/commands.h"
#include "tools/staticlm/flag_values.h"
#include "tools/staticlm/generation.h"
#include "tools/staticlm/heap_counts.h"
#include "tools/staticlm/json_writer.h"

namespace staticlm::cli {
namespace {

constexpr const char* kDefaultPrompt = "The theory of special relativity states ";

// Host buffers of the CLI, allocated before the run phase starts.
struct RunBuffers {
  std::unique_ptr<char[]> prompt_text;
  std::unique_ptr<int32_t[]> prompt_tokens;
  std::unique_ptr<int32_t[]> generated;
  std::unique_ptr<char[]> text;  // --json: the generated text
  size_t prompt_capacity = 0;
  size_t text_capacity = 0;
  size_t text_bytes = 0;
  size_t n_prompt_ids = 0;              // --prompt-ids: how many ids prompt_tokens holds
  bool error_reported = false;          // the CLI printed its own message for the failure
  staticlm_chat_format_info chat = {};  // --chat: the context's chat format
};

void CollectText(void* user, const char* text, size_t bytes) {
  auto* b = static_cast<RunBuffers*>(user);
  size_t room = b->text_capacity - b->text_bytes;
  size_t n = bytes < room ? bytes : room;
  std::memcpy(b->text.get() + b->text_bytes, text, n);
  b->text_bytes += n;
}

// With --load-session, no prompt (or an empty one) continues the saved generation.
bool ContinuesSession(const Options& o) {
  return o.load_session != nullptr && (o.prompt == nullptr || o.prompt[0] == '\0');
}

// A --chat prompt after a loaded conversation: the next turn of it. It first closes the
// assistant turn the session ended in (its end-of-turn token was sampled but not decoded), as
// `staticlm chat` does between turns.
staticlm_status ChatContinuation(staticlm_context* ctx, const char* prompt, RunBuffers* b,
                                 size_t* n) {
  size_t prefix = std::strlen(b->chat.end_of_turn);
  if (prefix > b->prompt_capacity) {
    std::fprintf(stderr, "staticlm: --max-prompt-bytes is too small for a chat turn\n");
    b->error_reported = true;
    return STATICLM_INVALID_ARGUMENT;
  }
  std::memcpy(b->prompt_text.get(), b->chat.end_of_turn, prefix);
  staticlm_chat_message message = {"user", prompt};
  size_t rendered = 0;
  staticlm_status s = staticlm_format_chat(ctx, &message, 1, 1, 1, b->prompt_text.get() + prefix,
                                           b->prompt_capacity - prefix, &rendered);
  *n = prefix + rendered;
  return s;
}

// Renders the prompt as text: as given, or wrapped in the chat template with --chat.
staticlm_status PromptText(staticlm_context* ctx, const Options& o, RunBuffers* b, size_t* n) {
  const char* prompt = o.prompt != nullptr ? o.prompt : kDefaultPrompt;
  if (o.chat_template && staticlm_position(ctx) > 0) return ChatContinuation(ctx, prompt, b, n);
  if (!o.chat_template) {
    *n = std::strlen(prompt);
    if (*n > b->prompt_capacity) {
      std::fprintf(stderr, "staticlm: the prompt is %zu bytes, more than --max-prompt-bytes %zu\n",
                   *n, b->prompt_capacity);
      b->error_reported = true;
      return STATICLM_INVALID_ARGUMENT;
    }
    std::memcpy(b->prompt_text.get(), prompt, *n);
    return STATICLM_OK;
  }
  staticlm_chat_message messages[2];
  size_t count = 0;
  if (o.system != nullptr) messages[count++] = {"system", o.system};
  messages[count++] = {"user", prompt};
  return staticlm_format_chat(ctx, messages, count, 1, 0, b->prompt_text.get(), b->prompt_capacity,
                              n);
}

void PrintFigures(const GenerationStats& st, const staticlm_memory& memory,
                  const HeapCounts& heap) {
  double prefill = st.prefill_seconds > 0 ? st.prompt_tokens / st.prefill_seconds : 0;
  double decode = st.decode_seconds > 0 ? st.decode_steps / st.decode_seconds : 0;
  std::fprintf(stderr,
               "\n[staticlm] prompt_tokens=%zu generated_tokens=%zu prefill=%.1f tok/s "
               "decode=%.1f tok/s peak_rss=%.1f MiB planned=%.1f MiB",
               st.prompt_tokens, st.generated_tokens, prefill, decode, PeakRssBytes() / 1048576.0,
               memory.total_bytes / 1048576.0);
  PrintHeapCounts(stderr, heap);
  std::fprintf(stderr, "\n");
}

void PrintJson(const GenerationStats& st, const staticlm_memory& memory, const HeapCounts& heap,
               const RunBuffers& b) {
  double prefill = st.prefill_seconds > 0 ? st.prompt_tokens / st.prefill_seconds : 0;
  double decode = st.decode_seconds > 0 ? st.decode_steps / st.decode_seconds : 0;
  std::fputs("{\"prompt_tokens\": ", stdout);
  WriteJsonIntArray(stdout, b.prompt_tokens.get(), st.prompt_tokens);
  std::fputs(", \"tokens\": ", stdout);
  WriteJsonIntArray(stdout, b.generated.get(), st.generated_tokens);
  std::fputs(", \"text\": ", stdout);
  WriteJsonString(stdout, b.text.get(), b.text_bytes);
  std::fprintf(stdout,
               ", \"prefill_tokens_per_s\": %.3f, \"decode_tokens_per_s\": %.3f, "
               "\"peak_rss_bytes\": %llu, \"planned_bytes\": %llu",
               prefill, decode, static_cast<unsigned long long>(PeakRssBytes()),
               static_cast<unsigned long long>(memory.total_bytes));
  PrintHeapCountsJson(stdout, heap);
  std::fputs("}\n", stdout);
}

// Tokenizes the prompt; none when continuing a loaded session.
staticlm_status PromptTokens(staticlm_context* ctx, const Options& o, RunBuffers* b,
                             size_t* n_prompt) {
  *n_prompt = 0;
  if (ContinuesSession(o)) return STATICLM_OK;
  size_t text_bytes = 0;
  staticlm_status s = STATICLM_OK;
  if (o.prompt_ids != nullptr) {
    *n_prompt = b->n_prompt_ids;  // parsed at init (PromptIdsOrReport)
  } else {
    s = PromptText(ctx, o, b, &text_bytes);
  }
  if (s == STATICLM_OK && o.prompt_ids == nullptr) {
    s = staticlm_tokenize(ctx, b->prompt_text.get(), text_bytes, 1, b->prompt_tokens.get(),
                          b->prompt_capacity + 1, n_prompt);
  }
  if (s == STATICLM_OK && *n_prompt == 0) {
    std::fprintf(stderr, "staticlm: the prompt is empty\n");
    b->error_reported = true;
    s = STATICLM_INVALID_ARGUMENT;
  }
  if (s == STATICLM_OK && *n_prompt > static_cast<size_t>(o.limits.max_context)) {
    std::fprintf(stderr, "staticlm: the prompt is %zu tokens, longer than the context (%d)\n",
                 *n_prompt, o.limits.max_context);
    b->error_reported = true;
    s = STATICLM_CONTEXT_FULL;
  }
  return s;
}

// --save-session: the generation stopped before decoding its last token (its logits were not
// needed); decode it now, so the session's logits give the next token, as an uninterrupted
// run of more tokens would.
staticlm_status SaveSession(staticlm_context* ctx, const Options& o, const GenerationStats& st,
                            const RunBuffers& b) {
  if (st.generated_tokens > 0 && st.generated_tokens == static_cast<size_t>(o.max_tokens) &&
      !st.ended && !st.context_full) {
    staticlm_status s = staticlm_decode(ctx, b.generated[st.generated_tokens - 1]);
    if (s != STATICLM_OK) return s;
  }
  return staticlm_session_save(ctx, o.save_session);
}

// Init: --prompt-ids, parsed and checked against the vocabulary before the run phase.
bool PromptIdsOrReport(staticlm_context* ctx, const Options& o, RunBuffers* b) {
  if (o.prompt_ids == nullptr) return true;
  if (o.prompt != nullptr || o.chat_template) {
    std::fprintf(stderr, "staticlm: --prompt-ids replaces --prompt and --chat; give one of them\n");
    return false;
  }
  staticlm_model_info info;
  staticlm_get_model_info(ctx, &info);
  return ParseTokenIds("--prompt-ids", o.prompt_ids, info.vocab_size, b->prompt_tokens.get(),
                       b->prompt_capacity + 1, &b->n_prompt_ids);
}

}  // namespace

int RunCommand(int argc, char** argv) {
  Options o;
  if (!ParseOptions(argc, argv, 2, &o)) return 2;
  staticlm_context* ctx = CreateContextOrReport(o.model, o.limits);
  if (ctx == nullptr) return 1;
  RunBuffers b;
  if (o.chat_template && !ChatFormatOrReport(ctx, o.chat_format, &b.chat)) {
    staticlm_destroy(ctx);
    return 1;
  }
  b.prompt_capacity = static_cast<size_t>(o.limits.max_prompt_bytes);
  b.prompt_text.reset(new char[b.prompt_capacity]);
  b.prompt_tokens.reset(new int32_t[b.prompt_capacity + 1]);
  b.generated.reset(new int32_t[static_cast<size_t>(o.max_tokens) + 1]);
  b.text_capacity = static_cast<size_t>(o.max_tokens) * 64;
  b.text.reset(new char[b.text_capacity + 1]);
  if (!PromptIdsOrReport(ctx, o, &b)) {
    staticlm_destroy(ctx);
    return 2;
  }
  staticlm_memory memory;
  staticlm_get_memory(ctx, &memory);
  staticlm_seed(ctx, o.seed);

  alloc_counter::Start();  // from here on: the run phase
  size_t n_prompt = 0;
  GenerationStats stats;
  // The session carries the random state, so it replaces --seed.
  staticlm_status s =
      o.load_session != nullptr ? staticlm_session_load(ctx, o.load_session) : STATICLM_OK;
  if (s == STATICLM_OK) s = PromptTokens(ctx, o, &b, &n_prompt);
  if (s == STATICLM_OK) {
    TextOutput out = o.json ? TextOutput{CollectText, &b} : StdoutOutput();
    s = Generate(ctx, b.prompt_tokens.get(), n_prompt, o.sampler, o.max_tokens, b.generated.get(),
                 out, &stats, o.save_session == nullptr);
  }
  if (s == STATICLM_OK && o.save_session != nullptr) s = SaveSession(ctx, o, stats, b);
  alloc_counter::Stop();
  const HeapCounts heap = ReadHeapCounts();

  int exit_code = 0;
  if (s != STATICLM_OK) {
    if (!b.error_reported) std::fprintf(stderr, "staticlm: %s\n", staticlm_last_error(ctx));
    exit_code = 1;
  } else if (o.json) {
    PrintJson(stats, memory, heap, b);
  } else {
    PrintFigures(stats, memory, heap);
  }
  staticlm_destroy(ctx);
  return exit_code;
}

}  // namespace staticlm::cli
