#include "backends/vulkan/vk_timestamps.h"

#include <algorithm>

namespace staticlm::vulkan {

Status DispatchTimer::Prepare(DeviceContext* dc,
                              const std::vector<std::vector<Dispatch>>& dispatches,
                              const Plan* const* plans) {
  const DeviceInfo& info = dc->info();
  if (!Supported(info)) {
    return Status::Error(StatusCode::kUnsupported,
                         "Vulkan device '%s' cannot time ops: its compute queue writes no "
                         "timestamps",
                         info.name);
  }
  uint32_t queries = 0;
  size_t most_dispatches = 0, most_ops = 0;
  for (size_t i = 0; i < dispatches.size(); ++i) {
    first_query_.push_back(queries);
    query_count_.push_back(static_cast<uint32_t>(dispatches[i].size()) + 1);
    queries += query_count_.back();
    most_dispatches = std::max(most_dispatches, dispatches[i].size());
    most_ops = std::max(most_ops, plans[i]->ops.size());
  }
  ticks_.assign(most_dispatches + 1, 0);
  op_seconds_.assign(most_ops, 0.0);
  tick_mask_ = info.timestamp_bits >= 64 ? ~0ull : (1ull << info.timestamp_bits) - 1;
  seconds_per_tick_ = static_cast<double>(info.timestamp_period_ns) * 1e-9;
  VkQueryPoolCreateInfo ci{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  ci.queryType = VK_QUERY_TYPE_TIMESTAMP;
  ci.queryCount = queries;
  dc->counters().object_creations.fetch_add(1);
  if (vkCreateQueryPool(dc->device(), &ci, dc->allocator(), &pool_) != VK_SUCCESS) {
    pool_ = VK_NULL_HANDLE;
    return Status::Error(StatusCode::kOutOfMemory, "cannot create a Vulkan timestamp query pool");
  }
  return Status::Ok();
}

void DispatchTimer::Destroy(DeviceContext* dc) {
  if (pool_ != VK_NULL_HANDLE) vkDestroyQueryPool(dc->device(), pool_, dc->allocator());
  pool_ = VK_NULL_HANDLE;
}

void DispatchTimer::RecordStart(VkCommandBuffer cb, int plan) const {
  // A query is reset before each write: the buffer is replayed every step.
  const size_t i = static_cast<size_t>(plan);
  vkCmdResetQueryPool(cb, pool_, first_query_[i], query_count_[i]);
  vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool_, first_query_[i]);
}

void DispatchTimer::RecordAfter(VkCommandBuffer cb, int plan, size_t index) const {
  vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool_,
                      first_query_[static_cast<size_t>(plan)] + static_cast<uint32_t>(index) + 1);
}

Status DispatchTimer::Collect(DeviceContext* dc, int plan, const Plan& p,
                              const std::vector<Dispatch>& dispatches, OpProfile* profile) {
  const uint32_t count = query_count_[static_cast<size_t>(plan)];
  VkResult r = vkGetQueryPoolResults(
      dc->device(), pool_, first_query_[static_cast<size_t>(plan)], count, count * sizeof(uint64_t),
      ticks_.data(), sizeof(uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
  if (r != VK_SUCCESS) {
    return Status::Error(StatusCode::kInternal, "Vulkan: cannot read the step's timestamps");
  }
  std::fill(op_seconds_.begin(), op_seconds_.begin() + static_cast<long>(p.ops.size()), 0.0);
  for (size_t i = 0; i < dispatches.size(); ++i) {
    const Dispatch& d = dispatches[i];
    const double seconds =
        static_cast<double>((ticks_[i + 1] - ticks_[i]) & tick_mask_) * seconds_per_tick_;
    for (uint32_t k = 0; k < d.ops; ++k) op_seconds_[d.op + k] += seconds / d.ops;
  }
  for (size_t j = 0; j < p.ops.size(); ++j) profile->Add(p, p.ops[j], op_seconds_[j]);
  return Status::Ok();
}

}  // namespace staticlm::vulkan
