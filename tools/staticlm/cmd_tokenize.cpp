// `staticlm tokenize` and `staticlm detokenize`: the model's tokenizer on its own, for
// checking what a prompt becomes and what ids say.
//   tokenize [--json] [options] TEXT   one line per token: the id and its vocabulary spelling
//                                      (--json: {"ids": [...], "pieces": [...]})
//   detokenize [--json] [options] IDS  the text of comma-separated ids (--json: {"ids",
//                                      "text"})
// TEXT / IDS is the last argument (or --prompt TEXT / --prompt-ids IDS). Special tokens
// written in TEXT are recognised, as run does; BOS is added when the model's file says so.
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "tools/staticlm/cli_options.h"
#include "tools/staticlm/commands.h"
#include "tools/staticlm/flag_values.h"
#include "tools/staticlm/generation.h"
#include "tools/staticlm/json_writer.h"

namespace staticlm::cli {
namespace {

// Options, with the last argument as the text (or ids), unless the input comes by flag
// (--prompt TEXT, --prompt-ids IDS) or the last argument is --json.
bool ParseWithOperand(int argc, char** argv, const char* operand_flag, Options* o,
                      const char** operand) {
  const char* last = argc > 2 ? argv[argc - 1] : nullptr;
  const char* before = argc > 3 ? argv[argc - 2] : "";
  const bool by_flag = !std::strcmp(before, "--prompt") || !std::strcmp(before, "--prompt-ids");
  const bool last_is_operand = last != nullptr && std::strcmp(last, "--json") != 0 && !by_flag;
  if (!ParseOptions(last_is_operand ? argc - 1 : argc, argv, 2, o)) return false;
  *operand = last_is_operand ? last : nullptr;
  if (*operand == nullptr) {
    *operand = !std::strcmp(operand_flag, "--prompt") ? o->prompt : o->prompt_ids;
  }
  if (*operand == nullptr) {
    std::fprintf(stderr, "staticlm: %s needs its input as the last argument (or %s)\n", argv[1],
                 operand_flag);
    return false;
  }
  return true;
}

void PrintPieces(staticlm_context* ctx, const int32_t* ids, size_t n, bool json) {
  char piece[1024];
  if (json) {
    std::fputs("{\"ids\": ", stdout);
    WriteJsonIntArray(stdout, ids, n);
    std::fputs(", \"pieces\": [", stdout);
  }
  for (size_t i = 0; i < n; ++i) {
    size_t bytes = 0;
    if (staticlm_token_piece(ctx, ids[i], piece, sizeof(piece), &bytes) != STATICLM_OK) bytes = 0;
    if (json) {
      if (i > 0) std::fputs(", ", stdout);
      WriteJsonString(stdout, piece, bytes);
    } else {
      std::fprintf(stdout, "%d\t", ids[i]);
      WriteJsonString(stdout, piece, bytes);
      std::fputc('\n', stdout);
    }
  }
  if (json) std::fputs("]}\n", stdout);
}

// A context small enough to load fast: the tokenizer is all these commands use.
staticlm_context* TokenizerContext(Options* o, size_t text_bytes) {
  if (o->limits.max_context > 256) o->limits.max_context = 256;
  if (o->limits.prefill_chunk > 16) o->limits.prefill_chunk = 16;
  if (text_bytes > static_cast<size_t>(o->limits.max_prompt_bytes)) {
    o->limits.max_prompt_bytes =
        static_cast<int32_t>(text_bytes > (1u << 30) ? (1u << 30) : text_bytes);
  }
  return CreateContextOrReport(o->model, o->limits);
}

}  // namespace

int TokenizeCommand(int argc, char** argv) {
  Options o;
  const char* text = nullptr;
  if (!ParseWithOperand(argc, argv, "--prompt", &o, &text)) return 2;
  const size_t bytes = std::strlen(text);
  staticlm_context* ctx = TokenizerContext(&o, bytes);
  if (ctx == nullptr) return 1;
  // An id per byte, BOS and a space prefix; NFC (Qwen2's tokenizer.json) can triple the text.
  const size_t capacity = 3 * bytes + 4;
  std::unique_ptr<int32_t[]> ids(new int32_t[capacity]);
  size_t n = 0;
  int exit_code = 0;
  if (staticlm_tokenize(ctx, text, bytes, 1, ids.get(), capacity, &n) != STATICLM_OK) {
    std::fprintf(stderr, "staticlm: %s\n", staticlm_last_error(ctx));
    exit_code = 1;
  } else {
    PrintPieces(ctx, ids.get(), n, o.json);
  }
  staticlm_destroy(ctx);
  return exit_code;
}

int DetokenizeCommand(int argc, char** argv) {
  Options o;
  const char* list = nullptr;
  if (!ParseWithOperand(argc, argv, "--prompt-ids", &o, &list)) return 2;
  staticlm_context* ctx = TokenizerContext(&o, 0);
  if (ctx == nullptr) return 1;
  staticlm_model_info info;
  staticlm_get_model_info(ctx, &info);
  const size_t capacity = std::strlen(list) / 2 + 1;  // an id and its comma take 2 bytes
  std::unique_ptr<int32_t[]> ids(new int32_t[capacity]);
  size_t n = 0;
  if (!ParseTokenIds("detokenize", list, info.vocab_size, ids.get(), capacity, &n)) {
    staticlm_destroy(ctx);
    return 2;
  }
  // Each token's text, then what the stream held back (an incomplete character).
  std::string text;
  char piece[4096];
  int exit_code = 0;
  for (size_t i = 0; i < n && exit_code == 0; ++i) {
    size_t bytes = 0;
    if (staticlm_token_to_text(ctx, ids[i], piece, sizeof(piece), &bytes) != STATICLM_OK) {
      std::fprintf(stderr, "staticlm: %s\n", staticlm_last_error(ctx));
      exit_code = 1;
    }
    text.append(piece, bytes);
  }
  text.append(piece, staticlm_flush_text(ctx, piece, sizeof(piece)));
  if (exit_code == 0 && o.json) {
    std::fputs("{\"ids\": ", stdout);
    WriteJsonIntArray(stdout, ids.get(), n);
    std::fputs(", \"text\": ", stdout);
    WriteJsonString(stdout, text.data(), text.size());
    std::fputs("}\n", stdout);
  } else if (exit_code == 0) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fputc('\n', stdout);
  }
  staticlm_destroy(ctx);
  return exit_code;
}

}  // namespace staticlm::cli
