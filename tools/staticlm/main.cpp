// staticlm: run, chat with and inspect a model. A thin client of include/staticlm/staticlm.h.
#include <cstdio>
#include <cstring>

#include "tools/staticlm/commands.h"

namespace {

// stdin and stdout get fixed buffers: stdio would otherwise allocate them on first use, which
// is inside the run phase.
char stdout_buffer[1 << 16];
char stdin_buffer[1 << 16];

void PrintUsage(FILE* out) {
  std::fputs(
      "usage: staticlm <command> [options]\n"
      "commands:\n"
      "  run      generate from a prompt, streaming text, then print figures\n"
      "  chat     interactive multi-turn chat (the cache is kept between turns)\n"
      "  inspect  print the model's metadata, tensor types and planned memory\n"
      "  bench    measure init, first-token time, prefill and per-token decode latency\n"
      "  plan     build the plans ahead of time: -o FILE saves them, --print shows the op\n"
      "           table, --json a summary; run --plan FILE loads them without building\n"
      "  batch    many prompts at once: --batch N sequences decode together, one token\n"
      "           each per step; a finished one's slot takes the next --prompt (repeatable)\n"
      "  soak     generate --tokens N tokens with a sliding window, printing RSS, latency\n"
      "           and heap events every --every tokens; fails if RSS or the heap moved\n"
      "  tokenize [--json] TEXT  print the ids TEXT becomes, with each token's vocabulary\n"
      "           spelling (--json: {\"ids\", \"pieces\"}); TEXT comes last\n"
      "  detokenize [--json] IDS  print the text of comma-separated ids (1,2,3)\n"
      "  serve    an OpenAI-compatible HTTP server on --sessions N fixed sessions\n"
      "           (--host 127.0.0.1, --port 8080, 0 = any free port; --max-tokens N caps\n"
      "           a request; also --model --ctx --chunk --threads --kv --backend ...)\n"
      "  help     print this text\n"
      "options (run, chat, inspect):\n"
      "  --model PATH         GGUF model (default: models/SmolLM2-135M-Instruct.Q4_1.gguf), or\n"
      "                       a Hugging Face folder (config.json, *.safetensors)\n"
      "  --quantize T         folders: quantize weight matrices at init: q8_0, q4_0, q4_k\n"
      "  --ctx N              max context in tokens (default 2048)\n"
      "  --chunk N            prefill chunk in tokens (default 64)\n"
      "  --kv f16|f32|q8|q4   KV cache type (default f16)\n"
      "  --activations A      f32 (default), int16 or int8: quantize the activations of\n"
      "                       quantized-weight products for integer dot products (CPU)\n"
      "  --window W           sliding-window cache of W positions (constant memory)\n"
      "  --sinks S            with --window: keep the first S positions (attention sinks);\n"
      "                       on a hybrid model (Gemma 3) the global layers' window and sinks\n"
      "  --window model       the window (and layer pattern) the model's metadata gives\n"
      "  --global-every N     with --window: every N-th layer keeps a global (static) cache\n"
      "  --threads N          worker threads including the caller (default 1)\n"
      "  --batch N            sequences held and decoded together (default 1, at most 64)\n"
      "  --reference          use the plain reference kernels (the oracle), not SIMD\n"
      "  --isa I              CPU kernels: auto (default: the best the CPU has), avx512,\n"
      "                       avx2, neon or scalar (= --reference); one the CPU lacks fails\n"
      "  --busy-wait          workers spin between ops instead of sleeping\n"
      "  --pin                pin worker threads to cores\n"
      "  --lock               pre-fault and mlock weights, cache and arena at init\n"
      "  --small-pages        normal pages for the cache, arena and packed weights (default:\n"
      "                       transparent huge pages where the system allows)\n"
      "  --max-prompt-bytes N longest prompt text accepted (default 16384)\n"
      "  --plan FILE          load plans saved by `staticlm plan -o` (sizes come from it)\n"
      "  --backend B          cpu (default), vulkan, cuda, or auto (the first of cuda,\n"
      "                       vulkan and cpu that works; one line says which and why)\n"
      "  --device N           Vulkan or CUDA device index (staticlm inspect --devices)\n"
      "  --pipeline-cache F   Vulkan pipeline cache file, written at the first start and\n"
      "                       loaded at the next (default: <plan>.vkcache with --plan)\n"
      "  --no-fuse PASS       build plans without a fusion pass: norm, qkv, gate_up,\n"
      "                       residual or all (repeatable)\n"
      "options (run, chat, batch):\n"
      "  --prompt TEXT        the prompt (batch: repeat it, one per generation; run: default 'The "
      "theory of special relativity states "
      "')\n"
      "  --chat               run: wrap the prompt in the model's chat template\n"
      "  --chat-template NAME run, chat: format chat as NAME (chatml, gemma, llama3, phi3,\n"
      "                       mistral or mistral-nemo) whatever the model's file says, e.g.\n"
      "                       for a model without a template; run: implies --chat\n"
      "  --system TEXT        system message for --chat and chat (chat: prefilled once and\n"
      "                       snapshotted, /reset restores it; Gemma: part of each first turn;\n"
      "                       Mistral NeMo: part of the first turn)\n"
      "  --max-tokens N       tokens to generate (default 128)\n"
      "  --temperature T      0 = greedy (default 0.8)\n"
      "  --top-k K  --top-p P  --min-p P  --repeat-penalty R  --repeat-window N  --seed S\n"
      "  --prompt-ids IDS     run: feed comma-separated token ids as the prompt, untokenized\n"
      "  --json               run: print one JSON object instead of streaming (its \"tokens\"\n"
      "                       lists the generated ids, \"prompt_tokens\" the prompt's)\n"
      "  --save-session FILE  run: save the conversation to FILE when the run ends\n"
      "  --load-session FILE  run: continue the conversation saved in FILE (no prompt:\n"
      "                       continue the generation; with --chat, the prompt is a new turn)\n"
      "options (bench; also --model --threads --ctx --chunk --kv --isa --reference --busy-wait\n"
      "  --pin --small-pages):\n"
      "  --prompt-tokens N    synthetic prompt for first-token time and prefill (default 128)\n"
      "  --gen-tokens N       decode steps timed at each depth (default 64)\n"
      "  --depths D,D,...     cache depths at which decode is timed (default 0)\n"
      "  --reps R  --warmup N measured and unmeasured repetitions (default 3 and 1)\n"
      "  --json FILE          write the figures as one JSON object (bench/README.md)\n"
      "  --plot FILE          write an SVG of per-token decode latency\n"
      "  --probe-mib N        read-bandwidth probe buffer (default max(256, 4 x LLC); 0 = off)\n"
      "  --op-profile         time every op (cpu: the thread's clock; vulkan: device timestamps;\n"
      "                       cuda: events, without programmatic launch):\n"
      "                       a table per depth, and one for the prefill, of calls, ms and\n"
      "                       weight GB/s per token by op and weight type\n"
      "  (bench --ctx defaults to what the depths need, at least 2048, at most the model's)\n"
      "options (soak; also --model --threads --window --sinks --kv --backend --prompt --seed):\n"
      "  --tokens N           tokens to generate (default 100000)\n"
      "  --every N            tokens per printed sample (default 1000)\n"
      "  --warmup N           tokens before RSS must stay within 1 MiB (default 1000)\n"
      "  --json FILE  --plot FILE   the samples as JSON and as an SVG of latency and RSS\n",
      out);
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, stdout_buffer, _IOFBF, sizeof(stdout_buffer));
  std::setvbuf(stdin, stdin_buffer, _IOFBF, sizeof(stdin_buffer));
  if (argc < 2) {
    PrintUsage(stderr);
    return 2;
  }
  const char* command = argv[1];
  if (!std::strcmp(command, "run")) return staticlm::cli::RunCommand(argc, argv);
  if (!std::strcmp(command, "chat")) return staticlm::cli::ChatCommand(argc, argv);
  if (!std::strcmp(command, "inspect")) return staticlm::cli::InspectCommand(argc, argv);
  if (!std::strcmp(command, "bench")) return staticlm::cli::BenchCommand(argc, argv);
  if (!std::strcmp(command, "plan")) return staticlm::cli::PlanCommand(argc, argv);
  if (!std::strcmp(command, "batch")) return staticlm::cli::BatchCommand(argc, argv);
  if (!std::strcmp(command, "soak")) return staticlm::cli::SoakCommand(argc, argv);
  if (!std::strcmp(command, "tokenize")) return staticlm::cli::TokenizeCommand(argc, argv);
  if (!std::strcmp(command, "detokenize")) return staticlm::cli::DetokenizeCommand(argc, argv);
#ifdef STATICLM_SERVE
  if (!std::strcmp(command, "serve")) return staticlm::cli::ServeCommand(argc, argv);
#endif
  if (!std::strcmp(command, "help") || !std::strcmp(command, "--help")) {
    PrintUsage(stdout);
    return 0;
  }
  std::fprintf(stderr, "staticlm: unknown command '%s' (try: staticlm help)\n", command);
  return 2;
}
