#include "backends/vulkan/vulkan_backend.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "backends/vulkan/vk_fence_wait.h"
#include "backends/vulkan/vk_recorder.h"
#include "contract/plan_validation.h"
#include "platform/clock.h"

namespace staticlm::vulkan {
namespace {

// A step that takes longer than this is reported as a hung device rather than waited on.
constexpr uint64_t kStepTimeoutNs = 120ull * 1000 * 1000 * 1000;

constexpr VkBufferUsageFlags kStorage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;

const char* const kStyleNames[3] = {"column per invocation", "workgroup per column (subgroup sum)",
                                    "column per invocation, unit loads, x shared by subgroup"};

// Style 2 shares x over a subgroup of exactly 8 lanes with subgroupBroadcast and reads weight
// units through scalar-layout structs (shaders/matmul_units.comp).
bool SupportsUnitLoads(const DeviceInfo& info) {
  return info.subgroup_size == 8 && info.subgroup_ballot && info.scalar_block_layout;
}

// GPUs: a workgroup per column, summed with subgroup operations. CPU devices (lavapipe): a
// column per invocation, which measured fastest there (each SIMD lane a column), with unit
// loads where the device allows (3–5× faster on lavapipe). `forced` (tests) wins when the
// device supports it.
int ChooseMatMulStyle(const DeviceInfo& info, int forced) {
  if (forced == 1) return info.subgroup_arithmetic ? 1 : 0;
  if (forced == 2 || (forced != 0 && info.type == VK_PHYSICAL_DEVICE_TYPE_CPU)) {
    return SupportsUnitLoads(info) ? 2 : 0;
  }
  if (forced == 0) return 0;
  return info.subgroup_arithmetic ? 1 : 0;
}

const char* TypeName(VkPhysicalDeviceType t) {
  return t == VK_PHYSICAL_DEVICE_TYPE_CPU ? "cpu device" : "gpu";
}

constexpr const char* kDeviceLost = "Vulkan device lost";
constexpr const char* kTimedOut = "Vulkan step timed out; the device is not used again";

}  // namespace

VulkanBackend::VulkanBackend(const BackendOptions& options, const VulkanTestOptions& test)
    : options_(options), test_(test) {}

VulkanBackend::~VulkanBackend() {
  if (dc_.device() == VK_NULL_HANDLE) return;
  (void)vkDeviceWaitIdle(dc_.device());  // a lost device says so; its objects are freed anyway
  VkDevice dev = dc_.device();
  if (fence_ != VK_NULL_HANDLE) vkDestroyFence(dev, fence_, dc_.allocator());
  timer_.Destroy(&dc_);
  if (command_pool_ != VK_NULL_HANDLE) vkDestroyCommandPool(dev, command_pool_, dc_.allocator());
  if (descriptor_pool_ != VK_NULL_HANDLE) {
    vkDestroyDescriptorPool(dev, descriptor_pool_, dc_.allocator());
  }
  for (DeviceBuffer& b : buffers_) DestroyDeviceBuffer(dc_, &b);
  DestroyDeviceBuffer(dc_, &step_);
}

Status VulkanBackend::Prepare(const Plan* const* plans, int n_plans, const BufferBinding& buffers) {
  if (!plans_.empty()) return Status::Error(StatusCode::kInvalidState, "already prepared");
  for (int i = 0; i < n_plans; ++i) STATICLM_RETURN_IF_ERROR(ValidatePlan(*plans[i], buffers));
  host_ = buffers;
  DeviceOptions device_options;
  device_options.index = options_.device;
  device_options.validation = test_.validation;
  STATICLM_RETURN_IF_ERROR(dc_.Init(device_options));
  STATICLM_RETURN_IF_ERROR(pipelines_.Init(&dc_, options_.pipeline_cache_path));
  const DeviceInfo& info = dc_.info();
  matmul_style_ = ChooseMatMulStyle(info, test_.force_matmul_style);

  for (int i = 0; i < n_plans; ++i) {
    rope_rows_.AddPlan(*plans[i], buffers.data[static_cast<int>(BufferId::kWeights)]);
  }
  DispatchOptions dispatch_options;
  dispatch_options.matmul_style = matmul_style_;
  dispatch_options.max_group_count_x = info.max_group_count_x;
  dispatch_options.storage_offset_align = info.storage_offset_align;
  dispatch_options.max_storage_range = info.max_storage_range;
  dispatch_options.force_tiled_attention = test_.force_tiled_attention;
  if (test_.attention_splits_budget != 0) {
    dispatch_options.attention_splits_budget = test_.attention_splits_budget;
  }
  // Only llvmpipe counts loop iterations (vk_loop_budget.h); GPUs run loops to the end.
  if (std::strncmp(info.name, "llvmpipe", 8) != 0) dispatch_options.loop_budget = 0;
  if (test_.max_storage_binding != 0) {
    dispatch_options.max_storage_range =
        std::min(dispatch_options.max_storage_range, test_.max_storage_binding);
  }
  uint64_t scratch = 0;
  size_t n_dispatches = 0;
  dispatches_.resize(static_cast<size_t>(n_plans));
  for (int i = 0; i < n_plans; ++i) {
    STATICLM_RETURN_IF_ERROR(
        TranslatePlan(*plans[i], rope_rows_, dispatch_options, &dispatches_[size_t(i)], &scratch));
    n_dispatches += dispatches_[size_t(i)].size();
  }
  STATICLM_RETURN_IF_ERROR(CreateBuffers(buffers, scratch));
  STATICLM_RETURN_IF_ERROR(CreateCommandObjects(n_dispatches, n_plans));
  if (options_.profile_ops) STATICLM_RETURN_IF_ERROR(timer_.Prepare(&dc_, dispatches_, plans));
  for (int i = 0; i < n_plans; ++i) {
    RecordInputs in{&dc_,   &pipelines_,      buffers_,
                    &step_, descriptor_pool_, timer_.prepared() ? &timer_ : nullptr,
                    i};
    STATICLM_RETURN_IF_ERROR(RecordPlan(in, dispatches_[size_t(i)], commands_[size_t(i)]));
  }
  SamplingBuffers sampling{&buffers_[static_cast<int>(Slot::kIo)],
                           &buffers_[static_cast<int>(Slot::kDummy)], &step_};
  STATICLM_RETURN_IF_ERROR(
      sampling_.Prepare(&dc_, &pipelines_, command_pool_, sampling, plans, n_plans));
  Status saved = pipelines_.SaveCache();
  if (!saved.ok()) std::fprintf(stderr, "staticlm: warning: %s\n", saved.message());
  for (int i = 0; i < n_plans; ++i) plans_.push_back(plans[i]);
  std::snprintf(description_, sizeof(description_),
                "vulkan: %s (%s), matmul %s, %d pipelines%s, %zu dispatches, weights: %s",
                info.name, TypeName(info.type), kStyleNames[matmul_style_], pipelines_.count(),
                pipelines_.cache_loaded() ? " (from cache)" : "", n_dispatches, weights_note_);
  return Status::Ok();
}

Status VulkanBackend::CreateBuffers(const BufferBinding& b, uint64_t scratch) {
  auto slot = [&](Slot s) -> DeviceBuffer* { return &buffers_[static_cast<int>(s)]; };
  auto bytes = [&](BufferId id) { return b.bytes[static_cast<int>(id)]; };
  // Weights get one spare word: the quantized loaders may read one word past a row's end.
  // Used in place from the host mapping when the device can import it, else copied below.
  const uint8_t* weights = b.data[static_cast<int>(BufferId::kWeights)];
  Status imported = test_.no_host_import
                        ? Status::Error(StatusCode::kUnsupported, "import disabled by the test")
                        : ImportHostBuffer(dc_, weights, bytes(BufferId::kWeights), 16, kStorage,
                                           slot(Slot::kWeights));
  weights_imported_ = imported.ok();
  if (weights_imported_) {
    std::snprintf(weights_note_, sizeof(weights_note_), "imported from host memory");
  } else {
    std::snprintf(weights_note_, sizeof(weights_note_), "uploaded (%.140s)", imported.message());
  }
  if (!weights_imported_) {
    STATICLM_RETURN_IF_ERROR(CreateDeviceBuffer(dc_, bytes(BufferId::kWeights) + 16, kStorage,
                                                MemoryUse::kDevice, "the weights",
                                                slot(Slot::kWeights)));
  }
  STATICLM_RETURN_IF_ERROR(CreateDeviceBuffer(dc_, bytes(BufferId::kKvCache), kStorage,
                                              MemoryUse::kHost, "the KV cache",
                                              slot(Slot::kKvCache)));
  STATICLM_RETURN_IF_ERROR(CreateDeviceBuffer(dc_, bytes(BufferId::kArena), kStorage,
                                              MemoryUse::kDevice, "the arena", slot(Slot::kArena)));
  STATICLM_RETURN_IF_ERROR(CreateDeviceBuffer(dc_, bytes(BufferId::kIo), kStorage, MemoryUse::kHost,
                                              "the io buffer", slot(Slot::kIo)));
  STATICLM_RETURN_IF_ERROR(CreateDeviceBuffer(dc_, rope_rows_.bytes(), kStorage, MemoryUse::kHost,
                                              "the RoPE rows", slot(Slot::kRopeRows)));
  STATICLM_RETURN_IF_ERROR(CreateDeviceBuffer(dc_, scratch, kStorage, MemoryUse::kDevice,
                                              "the attention scratch", slot(Slot::kScratch)));
  STATICLM_RETURN_IF_ERROR(CreateDeviceBuffer(dc_, 16, kStorage, MemoryUse::kDevice,
                                              "a placeholder", slot(Slot::kDummy)));
  STATICLM_RETURN_IF_ERROR(CreateDeviceBuffer(dc_, sizeof(StepBlock),
                                              VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT, MemoryUse::kHost,
                                              "the step parameters", &step_));
  std::memset(slot(Slot::kKvCache)->mapped, 0, slot(Slot::kKvCache)->size);
  VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pi.queueFamilyIndex = dc_.queue_family();
  pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  dc_.counters().object_creations.fetch_add(1);
  if (vkCreateCommandPool(dc_.device(), &pi, dc_.allocator(), &command_pool_) != VK_SUCCESS) {
    return Status::Error(StatusCode::kOutOfMemory, "cannot create a Vulkan command pool");
  }
  if (weights_imported_) return Status::Ok();
  return UploadToBuffer(dc_, command_pool_, *slot(Slot::kWeights), 0, weights,
                        bytes(BufferId::kWeights));
}

Status VulkanBackend::CreateCommandObjects(size_t n_dispatches, int n_plans) {
  VkDescriptorPoolSize sizes[2] = {
      {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, static_cast<uint32_t>(n_dispatches * kStorageBindings)},
      {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, static_cast<uint32_t>(n_dispatches)}};
  VkDescriptorPoolCreateInfo dp{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  dp.maxSets = static_cast<uint32_t>(n_dispatches);
  dp.poolSizeCount = 2;
  dp.pPoolSizes = sizes;
  VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  dc_.counters().object_creations.fetch_add(2);
  if (vkCreateDescriptorPool(dc_.device(), &dp, dc_.allocator(), &descriptor_pool_) != VK_SUCCESS ||
      vkCreateFence(dc_.device(), &fi, dc_.allocator(), &fence_) != VK_SUCCESS) {
    return Status::Error(StatusCode::kOutOfMemory, "cannot create Vulkan descriptor pool/fence");
  }
  commands_.resize(static_cast<size_t>(n_plans));
  ran_.assign(static_cast<size_t>(n_plans), 0);
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = command_pool_;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = static_cast<uint32_t>(n_plans);
  dc_.counters().object_creations.fetch_add(1);
  if (vkAllocateCommandBuffers(dc_.device(), &ai, commands_.data()) != VK_SUCCESS) {
    return Status::Error(StatusCode::kOutOfMemory, "cannot allocate Vulkan command buffers");
  }
  return Status::Ok();
}

Status VulkanBackend::Usable() const {
  if (device_failure_ == nullptr) return Status::Ok();
  return Status::Error(StatusCode::kInternal, "%s", device_failure_);
}

Status VulkanBackend::Execute(int plan_index, const StepParams& step) {
  STATICLM_RETURN_IF_ERROR(Usable());
  if (plan_index < 0 || plan_index >= static_cast<int>(plans_.size())) {
    return Status::Error(StatusCode::kInvalidState, "no such plan prepared");
  }
  const Plan& plan = *plans_[static_cast<size_t>(plan_index)];
  STATICLM_RETURN_IF_ERROR(CheckStep(plan, step));
  double start = NowSeconds();
  const int io = static_cast<int>(BufferId::kIo);
  uint8_t* device_io = buffers_[io].mapped;
  const TensorRegion& tokens = plan.tensors[plan.tokens_tensor];
  std::memcpy(device_io + tokens.offset, host_.data[io] + tokens.offset,
              sizeof(int32_t) * static_cast<size_t>(step.n_tokens));
  // Each row's sequence, position and RoPE angles (vk_step.h): positions have no bound.
  WriteStepBlock(plan, step, reinterpret_cast<StepBlock*>(step_.mapped));
  rope_rows_.Write(plan, step, buffers_[static_cast<int>(Slot::kRopeRows)].mapped);
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &commands_[static_cast<size_t>(plan_index)];
  VkResult r = vkQueueSubmit(dc_.queue(), 1, &si, fence_);
  if (r == VK_SUCCESS) {
    r = WaitForRun(dc_.device(), fence_, kStepTimeoutNs, &ran_[static_cast<size_t>(plan_index)]);
  }
  if (r == VK_ERROR_DEVICE_LOST || r == VK_TIMEOUT) {
    device_failure_ = r == VK_TIMEOUT ? kTimedOut : kDeviceLost;
    return Usable();
  }
  if (r != VK_SUCCESS) return Status::Error(StatusCode::kInternal, "Vulkan submit failed");
  vkResetFences(dc_.device(), 1, &fence_);
  if (timer_.prepared()) {
    STATICLM_RETURN_IF_ERROR(timer_.Collect(
        &dc_, plan_index, plan, dispatches_[static_cast<size_t>(plan_index)], &op_profile_));
  }
  if (!options_.logits_on_request) {
    const TensorRegion& logits = plan.tensors[plan.logits_tensor];
    std::memcpy(host_.data[io] + logits.offset, device_io + logits.offset, logits.bytes());
    bytes_read_back_ += logits.bytes();
  }
  last_step_seconds_ = NowSeconds() - start;
  return Status::Ok();
}

Status VulkanBackend::FetchLogits(int plan_index, int32_t first_row, int32_t n_rows) {
  STATICLM_RETURN_IF_ERROR(Usable());
  if (plan_index < 0 || plan_index >= static_cast<int>(plans_.size())) {
    return Status::Error(StatusCode::kInvalidState, "no such plan prepared");
  }
  const Plan& plan = *plans_[static_cast<size_t>(plan_index)];
  const TensorRegion& logits = plan.tensors[plan.logits_tensor];
  if (first_row < 0 || n_rows < 0 || first_row > logits.shape[0] - n_rows) {
    return Status::Error(StatusCode::kInvalidArgument, "logits rows out of range");
  }
  const uint64_t row_bytes = logits.bytes() / static_cast<uint64_t>(logits.shape[0]);
  const uint64_t at = logits.offset + static_cast<uint64_t>(first_row) * row_bytes;
  const uint64_t bytes = static_cast<uint64_t>(n_rows) * row_bytes;
  const int io = static_cast<int>(BufferId::kIo);
  std::memcpy(host_.data[io] + at, buffers_[io].mapped + at, bytes);
  bytes_read_back_ += bytes;
  return Status::Ok();
}

Status VulkanBackend::SampleOnDevice(int plan_index, int32_t row, const DeviceSampling& sampling,
                                     int32_t* token) {
  STATICLM_RETURN_IF_ERROR(Usable());
  if (plans_.empty()) return Status::Error(StatusCode::kInvalidState, "not prepared");
  Status s = sampling_.Sample(plan_index, row, sampling, fence_, token);
  if (sampling_.device_failure() != nullptr) device_failure_ = sampling_.device_failure();
  STATICLM_RETURN_IF_ERROR(s);
  bytes_read_back_ += sizeof(int32_t);
  return Status::Ok();
}

uint8_t* VulkanBackend::MappedRange(BufferId id, uint64_t offset, uint64_t bytes) const {
  if (id == BufferId::kWeights) return nullptr;
  uint8_t* base = id == BufferId::kIo ? host_.data[static_cast<int>(id)]
                                      : buffers_[static_cast<int>(id)].mapped;
  uint64_t size = host_.bytes[static_cast<int>(id)];
  if (base == nullptr || offset > size || bytes > size - offset) return nullptr;
  return base + offset;
}

Status VulkanBackend::ReadBuffer(BufferId id, uint64_t offset, uint64_t bytes, void* dst) {
  if (id != BufferId::kIo) STATICLM_RETURN_IF_ERROR(Usable());  // the io buffer is the host's
  const uint8_t* src = MappedRange(id, offset, bytes);
  if (src == nullptr) return Status::Error(StatusCode::kInvalidArgument, "read out of bounds");
  if (id != BufferId::kIo) bytes_read_back_ += bytes;  // the io buffer read is the host's own
  if (bytes != 0) std::memcpy(dst, src, bytes);
  return Status::Ok();
}

Status VulkanBackend::WriteBuffer(BufferId id, uint64_t offset, uint64_t bytes, const void* src) {
  if (id != BufferId::kIo) STATICLM_RETURN_IF_ERROR(Usable());
  uint8_t* dst = MappedRange(id, offset, bytes);
  if (dst == nullptr) return Status::Error(StatusCode::kInvalidArgument, "write out of bounds");
  if (bytes != 0) std::memcpy(dst, src, bytes);
  return Status::Ok();
}

Status VulkanBackend::CopyWithinBuffer(BufferId id, uint64_t src_offset, uint64_t dst_offset,
                                       uint64_t bytes) {
  if (id != BufferId::kIo) STATICLM_RETURN_IF_ERROR(Usable());
  uint8_t* src = MappedRange(id, src_offset, bytes);
  uint8_t* dst = MappedRange(id, dst_offset, bytes);
  if (src == nullptr || dst == nullptr) {
    return Status::Error(StatusCode::kInvalidArgument, "copy out of bounds");
  }
  if (bytes != 0) std::memmove(dst, src, bytes);
  return Status::Ok();
}

}  // namespace staticlm::vulkan
