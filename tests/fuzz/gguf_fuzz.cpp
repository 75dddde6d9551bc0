// libFuzzer target: the GGUF reader and what init reads from a file's metadata. Any bytes are
// parsed; a file that parses has every key and tensor view read, then its model config, its
// tokenizer (built and used on a short text) and its chat template, as staticlm_create would.
// Built and run by scripts/fuzz; seeds in tests/fuzz/corpus/gguf_fuzz/.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "runtime/gguf/gguf_file.h"
#include "runtime/model/model_config.h"
#include "runtime/model/rope_scaling.h"
#include "runtime/tokenizer/chat_template.h"
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/tokenizer/tokenizer_from_gguf.h"

namespace {

using namespace staticlm;

volatile uint8_t g_sink = 0;

void ReadEveryKey(const gguf::GgufFile& f) {
  std::vector<std::string_view> strings;
  std::vector<int32_t> ints;
  std::vector<float> floats;
  for (const gguf::KeyValue& kv : f.keys()) {
    uint32_t u32;
    float f32;
    std::string_view s;
    (void)f.GetU32(kv.key, &u32);
    (void)f.GetF32(kv.key, &f32);
    if (f.GetString(kv.key, &s).ok() && !s.empty())
      g_sink = g_sink ^ static_cast<uint8_t>(s.back());
    if (f.GetStringArray(kv.key, &strings).ok()) {
      for (std::string_view e : strings) {
        if (!e.empty()) g_sink = g_sink ^ static_cast<uint8_t>(e.back());
      }
    }
    (void)f.GetI32Array(kv.key, &ints);
    (void)f.GetF32Array(kv.key, &floats);
  }
  for (const gguf::TensorInfo& t : f.tensors()) g_sink = g_sink ^ t.data[0] ^ t.data[t.bytes - 1];
}

// The tokenizer of a hostile vocabulary must still encode and decode within its bounds.
void UseTokenizer(const gguf::GgufFile& f) {
  Tokenizer tokenizer;
  if (!InitTokenizerFromGguf(f, 64, &tokenizer).ok()) return;
  int32_t ids[80];
  size_t n = 0;
  const std::string_view text = "Hello, wörld! <|im_start|> 12345\n\t  ▁x";
  if (!tokenizer.Encode(text, true, ids, 80, &n).ok()) return;
  char bytes[256];
  for (size_t i = 0; i < n; ++i) {
    size_t written = 0;
    if (tokenizer.TokenBytes(ids[i], bytes, sizeof(bytes), &written).ok() && written > 0) {
      g_sink = g_sink ^ static_cast<uint8_t>(bytes[written - 1]);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gguf::GgufFile f;
  if (!f.Parse(data, size).ok()) return 0;
  ReadEveryKey(f);
  ModelConfig config;
  if (ReadModelConfig(f, &config).ok()) {
    // Linear and YaRN divisors, as Model::AddRopeScalingFactors computes them.
    for (float v : RopeScalingFactors(config.rope_scaling, config.rope_base, config.rope_dims))
      g_sink = g_sink ^ static_cast<uint8_t>(v >= 1.0f && v < 1e6f);
  }
  UseTokenizer(f);
  ChatTemplate chat;
  (void)InitChatTemplateFromGguf(f, "<s>", &chat);
  return 0;
}
