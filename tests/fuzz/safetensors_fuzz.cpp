// libFuzzer target: what a Hugging Face folder's files give init (runtime/hf/). The first byte
// chooses the file: even, a safetensors file, whose header is parsed and whose tensor names are
// mapped to GGUF names; odd, a config.json, which is read into GGUF metadata that GgufFile then
// adopts and ReadModelConfig reads, as a folder's load does, and again with each of its first
// values replaced by one of every other JSON type (json_type_swaps.h). Built and run by
// scripts/fuzz; seeds in tests/fuzz/corpus/safetensors_fuzz/.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/gguf/gguf_file.h"
#include "runtime/hf/gguf_header_builder.h"
#include "runtime/hf/hf_config.h"
#include "runtime/hf/hf_tensor_names.h"
#include "runtime/hf/safetensors_header.h"
#include "runtime/model/model_config.h"
#include "tests/fuzz/json_type_swaps.h"

namespace {

using namespace staticlm;

volatile uint8_t g_sink = 0;

void Safetensors(const uint8_t* data, size_t size) {
  hf::SafetensorsHeader header;
  if (!hf::ParseSafetensorsHeader(data, size, "model.safetensors", &header).ok()) return;
  std::string name;
  for (const hf::SafetensorsEntry& e : header.tensors) {
    // Every accepted range lies inside the file.
    const uint8_t* begin = data + header.data_start + e.begin;
    if (e.end > e.begin) g_sink = g_sink ^ begin[0] ^ begin[e.end - e.begin - 1];
    for (std::string_view arch : {"llama", "gemma3"}) {
      if (hf::MapTensorName(e.name, arch, &name) == hf::TensorNameMatch::kMapped) {
        g_sink = g_sink ^ static_cast<uint8_t>(name.size());
      }
    }
  }
}

void Config(std::string_view text) {
  hf::HfConfig config;
  hf::GgufHeaderBuilder header;
  if (!hf::ReadHfConfig(text, "config.json", &config, &header).ok()) return;
  // An embedding table so that ReadModelConfig gets past the metadata (no data: it is not read).
  const int64_t ne[2] = {64, 8};
  header.AddTensor("token_embd.weight", ne, 2, DType::kF32, 0);
  static const uint8_t kNoData[64 * 8 * 4] = {};
  gguf::GgufFile file;
  if (!file.AdoptHeader(header.Finish(), kNoData, sizeof(kNoData)).ok()) return;
  ModelConfig model;
  if (ReadModelConfig(file, &model).ok()) g_sink = g_sink ^ static_cast<uint8_t>(model.n_layers);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if (data[0] % 2 == 0) {
    Safetensors(data + 1, size - 1);
  } else {
    const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
    Config(text);
    // The same config with each of its first values mistyped (json_type_swaps.h).
    fuzz::ForEachTypeSwap(text, /*max_values=*/48, /*max_depth=*/4,
                          [](const std::string& swapped) { Config(swapped); });
  }
  return 0;
}
