#include <cstring>

#include "backends/vulkan/spirv_blobs.h"

namespace staticlm::vulkan {

const SpirvBlob* FindSpirv(const char* name) {
  for (int i = 0; i < kSpirvBlobCount; ++i) {
    if (std::strcmp(kSpirvBlobs[i].name, name) == 0) return &kSpirvBlobs[i];
  }
  return nullptr;
}

}  // namespace staticlm::vulkan
