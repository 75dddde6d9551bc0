#include "runtime/model/architecture.h"

namespace staticlm {
namespace {

// One row per family. Keep the columns aligned with Architecture's fields.
constexpr Architecture kArchitectures[] = {
    // name     scale  qk_norm post   activation                rope_halves swa  swa_base
    {"llama", false, false, false, FfnActivation::kSilu, false, 0, 0.0f},
    {"gemma3", true, true, true, FfnActivation::kGeluTanh, true, 6, 10000.0f},
};

}  // namespace

const Architecture* FindArchitecture(std::string_view name) {
  for (const Architecture& a : kArchitectures) {
    if (name == a.name) return &a;
  }
  return nullptr;
}

const char* SupportedArchitectureNames() {
  return "llama, gemma3";
}

}  // namespace staticlm
