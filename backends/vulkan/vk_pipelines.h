// Compute pipelines: the one descriptor set layout and pipeline layout every shader shares
// (shaders/common.glsl: eight storage buffers, the step's uniform block, 80 bytes of push
// constants), one pipeline per embedded shader variant the plans use, and the VkPipelineCache
// that makes the next start faster. Init only.
#pragma once

#include <cstdint>

#include "backends/vulkan/vk_api.h"
#include "backends/vulkan/vk_device.h"
#include "platform/status.h"

namespace staticlm::vulkan {

constexpr int kStorageBindings = 8;  // bindings 0..7; binding 8 is the step's uniform block

// The push constants of shaders/common.glsl, word for word.
struct PushConstants {
  uint32_t base[kStorageBindings] = {0, 0, 0, 0, 0, 0, 0, 0};
  uint32_t rows = 0;  // 0: the step's n_tokens
  uint32_t a = 0, b = 0, c = 0, d = 0, e = 0, f = 0, g = 0, h = 0, i = 0;
  float fa = 0.0f;
  uint32_t j = 0;
};
static_assert(sizeof(PushConstants) == 80, "must match shaders/common.glsl");

class PipelineSet {
 public:
  static constexpr int kMaxPipelines = 64;

  ~PipelineSet();
  // `cache_path`: a pipeline cache file to load (ignored with a note in `note` when stale or
  // corrupt) and later save; empty for none.
  Status Init(DeviceContext* dc, const char* cache_path);
  // The pipeline of shader variant `name`, created on first request (at Prepare only).
  Status Get(const char* name, VkPipeline* out);
  // Writes the pipeline cache to the path given to Init (atomically, via a temporary file).
  Status SaveCache();

  VkDescriptorSetLayout set_layout() const { return set_layout_; }
  VkPipelineLayout layout() const { return layout_; }
  int count() const { return n_; }
  bool cache_loaded() const { return cache_loaded_; }
  const char* note() const { return note_; }

 private:
  DeviceContext* dc_ = nullptr;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipelineCache cache_ = VK_NULL_HANDLE;
  char cache_path_[512] = {0};
  bool cache_loaded_ = false;
  char note_[640] = {0};
  const char* names_[kMaxPipelines] = {};
  VkPipeline pipelines_[kMaxPipelines] = {};
  int n_ = 0;
};

}  // namespace staticlm::vulkan
