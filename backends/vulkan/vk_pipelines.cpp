#include "backends/vulkan/vk_pipelines.h"

#include <cstdio>
#include <cstring>
#include <vector>

#include "backends/vulkan/spirv_blobs.h"

namespace staticlm::vulkan {
namespace {

// Reads a whole file; false when it cannot be read.
bool ReadFile(const char* path, std::vector<uint8_t>* out) {
  FILE* f = std::fopen(path, "rb");
  if (f == nullptr) return false;
  uint8_t chunk[65536];
  size_t n = 0;
  while ((n = std::fread(chunk, 1, sizeof(chunk), f)) > 0)
    out->insert(out->end(), chunk, chunk + n);
  std::fclose(f);
  return true;
}

uint32_t Word(const std::vector<uint8_t>& d, size_t at) {
  uint32_t w = 0;
  std::memcpy(&w, d.data() + at, 4);
  return w;
}

// A VkPipelineCacheHeaderVersionOne made by this very driver and device, else a reason.
const char* CheckCacheHeader(const std::vector<uint8_t>& d, const DeviceInfo& info) {
  if (d.size() < 32 || Word(d, 0) < 32 || Word(d, 0) > d.size()) return "truncated or corrupt";
  if (Word(d, 4) != VK_PIPELINE_CACHE_HEADER_VERSION_ONE) return "unknown header version";
  if (Word(d, 8) != info.vendor_id || Word(d, 12) != info.device_id) return "another device's";
  if (std::memcmp(d.data() + 16, info.pipeline_cache_uuid, VK_UUID_SIZE) != 0) {
    return "made by another driver version";
  }
  return nullptr;
}

}  // namespace

PipelineSet::~PipelineSet() {
  if (dc_ == nullptr) return;
  VkDevice dev = dc_->device();
  for (int i = 0; i < n_; ++i) vkDestroyPipeline(dev, pipelines_[i], dc_->allocator());
  if (cache_ != VK_NULL_HANDLE) vkDestroyPipelineCache(dev, cache_, dc_->allocator());
  if (layout_ != VK_NULL_HANDLE) vkDestroyPipelineLayout(dev, layout_, dc_->allocator());
  if (set_layout_ != VK_NULL_HANDLE) {
    vkDestroyDescriptorSetLayout(dev, set_layout_, dc_->allocator());
  }
}

Status PipelineSet::Init(DeviceContext* dc, const char* cache_path) {
  dc_ = dc;
  std::snprintf(cache_path_, sizeof(cache_path_), "%s", cache_path != nullptr ? cache_path : "");
  VkDescriptorSetLayoutBinding bindings[kStorageBindings + 1] = {};
  for (int i = 0; i <= kStorageBindings; ++i) {
    bindings[i].binding = static_cast<uint32_t>(i);
    bindings[i].descriptorType = i < kStorageBindings ? VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
                                                      : VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER;
    bindings[i].descriptorCount = 1;
    bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo sl{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  sl.bindingCount = kStorageBindings + 1;
  sl.pBindings = bindings;
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(PushConstants)};
  VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pl.setLayoutCount = 1;
  pl.pSetLayouts = &set_layout_;
  pl.pushConstantRangeCount = 1;
  pl.pPushConstantRanges = &range;
  dc->counters().object_creations.fetch_add(2);
  if (vkCreateDescriptorSetLayout(dc->device(), &sl, dc->allocator(), &set_layout_) != VK_SUCCESS ||
      vkCreatePipelineLayout(dc->device(), &pl, dc->allocator(), &layout_) != VK_SUCCESS) {
    return Status::Error(StatusCode::kOutOfMemory, "cannot create the Vulkan pipeline layout");
  }
  std::vector<uint8_t> data;
  VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  if (cache_path_[0] != '\0' && ReadFile(cache_path_, &data)) {
    const char* problem = CheckCacheHeader(data, dc->info());
    if (problem == nullptr) {
      ci.initialDataSize = data.size();
      ci.pInitialData = data.data();
      cache_loaded_ = true;
      std::snprintf(note_, sizeof(note_), "pipeline cache: loaded %zu bytes from %s", data.size(),
                    cache_path_);
    } else {
      std::snprintf(note_, sizeof(note_), "pipeline cache %s ignored (%s)", cache_path_, problem);
    }
  }
  dc->counters().object_creations.fetch_add(1);
  if (vkCreatePipelineCache(dc->device(), &ci, dc->allocator(), &cache_) != VK_SUCCESS) {
    return Status::Error(StatusCode::kOutOfMemory, "cannot create the Vulkan pipeline cache");
  }
  return Status::Ok();
}

Status PipelineSet::Get(const char* name, VkPipeline* out) {
  for (int i = 0; i < n_; ++i) {
    if (std::strcmp(names_[i], name) == 0) {
      *out = pipelines_[i];
      return Status::Ok();
    }
  }
  const SpirvBlob* blob = FindSpirv(name);
  if (blob == nullptr) {
    return Status::Error(StatusCode::kInternal, "no embedded shader '%s'", name);
  }
  if (n_ == kMaxPipelines) return Status::Error(StatusCode::kInternal, "too many pipelines");
  VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  mi.codeSize = blob->n_words * sizeof(uint32_t);
  mi.pCode = blob->words;
  VkShaderModule module = VK_NULL_HANDLE;
  dc_->counters().object_creations.fetch_add(1);
  if (vkCreateShaderModule(dc_->device(), &mi, dc_->allocator(), &module) != VK_SUCCESS) {
    return Status::Error(StatusCode::kInternal, "cannot create shader module '%s'", name);
  }
  VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = module;
  ci.stage.pName = "main";
  ci.layout = layout_;
  VkPipeline pipeline = VK_NULL_HANDLE;
  dc_->counters().object_creations.fetch_add(1);
  VkResult r = vkCreateComputePipelines(dc_->device(), cache_, 1, &ci, dc_->allocator(), &pipeline);
  vkDestroyShaderModule(dc_->device(), module, dc_->allocator());
  if (r != VK_SUCCESS) {
    return Status::Error(StatusCode::kInternal, "cannot create pipeline '%s' (VkResult %d)", name,
                         static_cast<int>(r));
  }
  names_[n_] = blob->name;
  pipelines_[n_++] = pipeline;
  *out = pipeline;
  return Status::Ok();
}

Status PipelineSet::SaveCache() {
  if (cache_path_[0] == '\0') return Status::Ok();
  size_t size = 0;
  if (vkGetPipelineCacheData(dc_->device(), cache_, &size, nullptr) != VK_SUCCESS) {
    return Status::Error(StatusCode::kInternal, "cannot read the pipeline cache");
  }
  std::vector<uint8_t> data(size);
  if (vkGetPipelineCacheData(dc_->device(), cache_, &size, data.data()) != VK_SUCCESS) {
    return Status::Error(StatusCode::kInternal, "cannot read the pipeline cache");
  }
  char tmp[sizeof(cache_path_) + 8];
  std::snprintf(tmp, sizeof(tmp), "%s.tmp", cache_path_);
  FILE* f = std::fopen(tmp, "wb");
  bool ok = f != nullptr && std::fwrite(data.data(), 1, size, f) == size;
  if (f != nullptr) ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(tmp, cache_path_) != 0) {
    std::remove(tmp);
    return Status::Error(StatusCode::kIoError, "cannot write the pipeline cache %s", cache_path_);
  }
  if (!cache_loaded_) {
    const size_t used = std::strlen(note_);
    std::snprintf(note_ + used, sizeof(note_) - used, "%spipeline cache: wrote %zu bytes to %s",
                  used > 0 ? "; " : "", size, cache_path_);
  }
  return Status::Ok();
}

}  // namespace staticlm::vulkan
