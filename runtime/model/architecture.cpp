#include "runtime/model/architecture.h"

namespace staticlm {
namespace {

// One row per family. Keep the columns aligned with Architecture's fields.
constexpr Architecture kArchitectures[] = {
    // name scale qk_norm post activation rope_halves swa swa_base qkv_bias fused_gate_up
    // width_scaled_layers
    {"llama", false, false, false, FfnActivation::kSilu, false, 0, 0.0f, false, false, 0},
    {"gemma3", true, true, true, FfnActivation::kGeluTanh, true, 6, 10000.0f, false, false, 62},
    // Llama's graph. Its sliding window, like any family's, slides on every layer when the
    // metadata gives one (llama.cpp's converter writes Mistral as "llama", without the window).
    {"mistral", false, false, false, FfnActivation::kSilu, false, 0, 0.0f, false, false, 0},
    {"qwen2", false, false, false, FfnActivation::kSilu, true, 0, 0.0f, true, false, 0},
    {"qwen3", false, true, false, FfnActivation::kSilu, true, 0, 0.0f, false, false, 0},
    {"phi3", false, false, false, FfnActivation::kSilu, true, 0, 0.0f, false, true, 0},
};

}  // namespace

const Architecture* FindArchitecture(std::string_view name) {
  for (const Architecture& a : kArchitectures) {
    if (name == a.name) return &a;
  }
  return nullptr;
}

const char* SupportedArchitectureNames() {
  return "llama, gemma3, mistral, qwen2, qwen3, phi3";
}

}  // namespace staticlm
