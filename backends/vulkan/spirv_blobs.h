// The compiled compute shaders, embedded at build time by shaders/embed_spirv.cmake: one
// SPIR-V module per shader variant, named e.g. "matmul_q4_1_m0_s0" (see shaders/shaders.cmake).
#pragma once

#include <cstdint>

namespace staticlm::vulkan {

struct SpirvBlob {
  const char* name;
  const uint32_t* words;
  uint32_t n_words;
};

extern const SpirvBlob kSpirvBlobs[];
extern const int kSpirvBlobCount;

// The module named `name`, or nullptr.
const SpirvBlob* FindSpirv(const char* name);

}  // namespace staticlm::vulkan
