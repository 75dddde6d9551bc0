// Writes the seed corpora of the fuzz targets into DIR/<target>/ (scripts/fuzz --seeds DIR;
// the committed tests/fuzz/corpus/ was made this way): small real files of each format, made by
// staticlm itself or by the test-support builders, each beside a prefix of itself.
//   make_fuzz_seeds DIR
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/staticlm.h"
#include "tests/fuzz/fuzz_inputs.h"
#include "tests/support/gguf_samples.h"
#include "tests/support/gguf_writer.h"
#include "tests/support/spm_toy_vocab.h"

namespace {

using namespace staticlm;
using Bytes = std::vector<uint8_t>;

std::string g_dir;

// Writes `bytes` after the fuzz input's leading byte `lead` (when given), and its first half.
void Seed(const std::string& target, const std::string& name, const Bytes& bytes, int lead = -1) {
  Bytes input;
  if (lead >= 0) input.push_back(static_cast<uint8_t>(lead));
  input.insert(input.end(), bytes.begin(), bytes.end());
  const std::string dir = g_dir + "/" + target;
  (void)std::system(("mkdir -p '" + dir + "'").c_str());
  fuzz::WriteFileBytes(dir + "/" + name, input.data(), input.size());
  const size_t half = input.size() / 2;
  if (half > 0) fuzz::WriteFileBytes(dir + "/" + name + ".prefix", input.data(), half);
}

Bytes Text(std::string_view s) {
  return Bytes(s.begin(), s.end());
}

void GgufSeeds() {
  Seed("gguf_fuzz", "sample", test::SampleGguf());
  test::TinyLlamaOptions tiny;
  tiny.block_count = 1;
  tiny.embedding_length = 32;
  tiny.head_count = 2;
  tiny.head_count_kv = 1;
  tiny.feed_forward_length = 32;
  tiny.weight_type = DType::kQ4_0;
  tiny.embedding_type = DType::kQ4_0;
  test::GgufWriter llama;
  fuzz::Require(test::BuildTinyLlama(tiny, &llama).ok() ? STATICLM_OK : STATICLM_FORMAT_ERROR,
                "BuildTinyLlama");
  Seed("gguf_fuzz", "tiny_llama_q4_0", llama.Serialize());
  // YaRN's keys, for the scaling reader and its divisors (Model::AddRopeScalingFactors).
  llama.AddString("llama.rope.scaling.type", "yarn");
  llama.AddF32("llama.rope.scaling.factor", 4.0f);
  llama.AddU32("llama.rope.scaling.original_context_length", 64);
  llama.AddF32("llama.rope.scaling.yarn_beta_fast", 16.0f);
  llama.AddF32("llama.rope.scaling.yarn_beta_slow", 2.0f);
  Seed("gguf_fuzz", "tiny_llama_yarn", llama.Serialize());
  // Partial RoPE (12 of 16 elements): the width reader and the divisors for it.
  tiny.rope_dimension_count = 12;
  test::GgufWriter partial;
  fuzz::Require(test::BuildTinyLlama(tiny, &partial).ok() ? STATICLM_OK : STATICLM_FORMAT_ERROR,
                "BuildTinyLlama");
  Seed("gguf_fuzz", "tiny_llama_partial_rope", partial.Serialize());
  test::GgufWriter spm;
  test::SpmToyVocab().AddToGguf(&spm, "gemma3");
  Seed("gguf_fuzz", "spm_toy_vocab", spm.Serialize());
}

void TokenizerSeeds() {
  const std::string_view texts[] = {
      "Hello, world! It's 2024: 12345 apples.",
      "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
      "<start_of_turn>user\n  Bonjour,   ça va ?\t<end_of_turn>\n<bos>",
      "Grüße — 日本語のテキスト 🙂 ▁▁x  \r\n\n\n   spaces",
      "abc ab  ca <x> [u] a",
  };
  int i = 0;
  for (std::string_view t : texts) {
    for (int kind = 0; kind < 4; ++kind) {
      const int lead = kind | (i % 2 == 0 ? 8 : 0);  // parse_special on every other text
      Seed("tokenizer_fuzz", "encode_" + std::to_string(kind) + "_" + std::to_string(i), Text(t),
           lead);
    }
    ++i;
  }
  // Decoding: ids that split multi-byte characters, and ids out of range.
  Bytes ids;
  for (uint32_t id : {0u, 1u, 2u, 200u, 255u, 256u, 4000u, 0xffffffffu, 0x7fffffffu, 17u}) {
    for (int b = 0; b < 4; ++b) ids.push_back(static_cast<uint8_t>(id >> (8 * b)));
  }
  for (int kind = 0; kind < 4; ++kind) {
    Seed("tokenizer_fuzz", "decode_" + std::to_string(kind), ids, kind | 4);
  }
}

void ChatTemplateSeeds() {
  Seed("chat_template_fuzz", "smollm2", Text(test::SmolLM2ChatTemplate()));
  // Gemma 3's template as transformers renders it (tests/reference/chat_templates/).
  Seed("chat_template_fuzz", "gemma3",
       fuzz::ReadFileBytes(STATICLM_SOURCE_DIR "/tests/reference/chat_templates/gemma3.jinja"));
  // The real Llama 3.2, Phi-3.5, Mistral v0.2, Mistral NeMo, Qwen2.5 and Qwen3 templates.
  for (const char* name : {"llama3", "phi3", "mistral", "mistral_nemo", "qwen2", "qwen3"}) {
    Seed("chat_template_fuzz", name,
         fuzz::ReadFileBytes(std::string(STATICLM_SOURCE_DIR "/tests/reference/chat_templates/") +
                             name + ".jinja"));
  }
}

void TokenizerJsonSeeds() {
  for (const char* style : {"gpt2", "smollm", "llama3", "qwen2", "spm", "metaspace",
                            "metaspace_split", "gemma", "added", "digits", "gpt4o"}) {
    Seed("tokenizer_json_fuzz", style,
         fuzz::ReadFileBytes(std::string(STATICLM_SOURCE_DIR "/tests/golden/tokenizer_json/") +
                             style + "/tokenizer.json"));
  }
}

void PlanAndSessionSeeds() {
  const std::string model = fuzz::ScratchPath("seed-model.gguf");
  fuzz::WriteFuzzModel(model);
  const std::string scratch = fuzz::ScratchPath("seed-file");
  for (int kind = 0; kind < fuzz::kSessionContextKinds; ++kind) {
    staticlm_limits limits = fuzz::SessionLimits(kind);
    // Made with the plain reference kernels: a plan file records the kernel choice and a
    // session the cache's values, so with the SIMD kernels an AVX2-only machine made other
    // seeds than an AVX-512 one, and scripts/fuzz called the committed seeds stale wherever
    // they had not been made. The reference kernels give the same bytes on every x86 machine.
    // The targets keep the SIMD kernels (the session target runs ~10 times faster with them);
    // the plan target runs the reference kernels whatever a file says, and a session file
    // does not record which kernels filled its cache.
    limits.reference_kernels = 1;
    char error[256] = {0};
    fuzz::Require(staticlm_save_plan(model.c_str(), &limits, scratch.c_str(), error, sizeof(error)),
                  error);
    Seed("plan_fuzz", "tiny_" + std::to_string(kind), fuzz::ReadFileBytes(scratch), 0);
    staticlm_context* context = nullptr;
    fuzz::Require(staticlm_create(model.c_str(), &limits, &context, error, sizeof(error)), error);
    const int32_t tokens[] = {1, 40, 50, 60, 70, 80, 90, 100, 110, 120, 130};
    fuzz::Require(staticlm_prefill(context, tokens, kind == 0 ? 5 : 11), "prefill", context);
    fuzz::Require(staticlm_session_save(context, scratch.c_str()), "session save", context);
    Seed("session_fuzz", "tiny_" + std::to_string(kind), fuzz::ReadFileBytes(scratch),
         kind == 1 ? 0x80 : 0);
    staticlm_destroy(context);
  }
  std::remove(scratch.c_str());
  std::remove(model.c_str());
}

}  // namespace

// A Hugging Face folder's two kinds of file (safetensors_fuzz): the tiny test folder's
// config.json (lead byte 1), and a safetensors file of two small tensors (lead byte 0).
void SafetensorsSeeds() {
  const std::string config =
      std::string(STATICLM_SOURCE_DIR) + "/tests/models/hf/llama_f32/config.json";
  Seed("safetensors_fuzz", "config", fuzz::ReadFileBytes(config), 1);
  const std::string header =
      "{\"__metadata__\":{\"format\":\"pt\"},"
      "\"model.layers.0.input_layernorm.weight\":{\"dtype\":\"F32\",\"shape\":[4],"
      "\"data_offsets\":[0,16]},"
      "\"model.embed_tokens.weight\":{\"dtype\":\"BF16\",\"shape\":[2,4],"
      "\"data_offsets\":[16,32]}}";
  Bytes file(8, 0);
  file[0] = static_cast<uint8_t>(header.size());
  file.insert(file.end(), header.begin(), header.end());
  for (int i = 0; i < 32; ++i) file.push_back(static_cast<uint8_t>(i * 7));
  Seed("safetensors_fuzz", "tiny", file, 0);
}

// OpenAI-style bodies of `staticlm serve`'s two endpoints (lead byte: even for completions,
// odd for chat; the rest of it picks the --max-tokens cap, here 64).
void ServeRequestSeeds() {
  constexpr int kCompletions = 2 * 63, kChat = 2 * 63 + 1;
  Seed("serve_request_fuzz", "completion",
       Text(R"({"prompt": "Name a colour.", "max_tokens": 8, "temperature": 0.7, "top_p": 0.9,)"
            R"( "min_p": 0.05, "top_k": 40, "seed": 7, "stream": false})"),
       kCompletions);
  Seed("serve_request_fuzz", "chat",
       Text(R"({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user",)"
            R"( "content": "Hi é"}], "max_completion_tokens": 4, "stream": true})"),
       kChat);
  Seed("serve_request_fuzz", "chat_parts",
       Text(R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "a"},)"
            R"( {"type": "text", "text": "b"}]}, {"role": "assistant", "content": "c"}],)"
            R"( "temperature": null})"),
       kChat);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_fuzz_seeds DIR\n");
    return 2;
  }
  g_dir = argv[1];
  GgufSeeds();
  TokenizerSeeds();
  ChatTemplateSeeds();
  TokenizerJsonSeeds();
  PlanAndSessionSeeds();
  SafetensorsSeeds();
  ServeRequestSeeds();
  return 0;
}
