// Device time per plan op, for staticlm_limits.profile_ops on the Vulkan backend: each plan's
// recorded command buffer writes a timestamp query before its first dispatch and after every
// dispatch, and after the step's fence the differences are added to the backend's OpProfile,
// an op's dispatches summed (a dispatch computing two ops, a RoPE pair, gives each half).
// What a row then holds is the device's time from the end of the previous dispatch to the end
// of the op's last one: on a CPU device (lavapipe) the time its threads spent, on a GPU the
// time the queue spent, barriers included. Sampling on the device is not timed.
//
// Everything is created at init (Prepare: one query pool for every plan's timestamps, the
// buffers the results are read into); recording happens at init; Collect, in the run phase,
// reads the results into those buffers and allocates nothing.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/op_profile.h"
#include "backends/vulkan/vk_api.h"
#include "backends/vulkan/vk_device.h"
#include "backends/vulkan/vk_dispatch.h"
#include "contract/plan.h"
#include "platform/status.h"

namespace staticlm::vulkan {

class DispatchTimer {
 public:
  DispatchTimer() = default;
  DispatchTimer(const DispatchTimer&) = delete;
  DispatchTimer& operator=(const DispatchTimer&) = delete;

  // Whether `info`'s compute queue can write timestamps.
  static bool Supported(const DeviceInfo& info) {
    return info.timestamp_bits > 0 && info.timestamp_period_ns > 0.0f;
  }

  // Init: a query pool holding one timestamp more than each plan has dispatches. Fails with a
  // clear status when the device cannot time (Supported) or the pool cannot be created.
  Status Prepare(DeviceContext* dc, const std::vector<std::vector<Dispatch>>& dispatches,
                 const Plan* const* plans);
  // Destroys the pool; safe when Prepare never ran.
  void Destroy(DeviceContext* dc);
  bool prepared() const { return pool_ != VK_NULL_HANDLE; }

  // Recording (init): before the plan's first dispatch, and after its dispatch `index`.
  void RecordStart(VkCommandBuffer cb, int plan) const;
  void RecordAfter(VkCommandBuffer cb, int plan, size_t index) const;

  // Run phase, after the fence of a step of `plan` signalled: adds each op's time to
  // `profile`, one call per op of the plan. Allocates nothing.
  Status Collect(DeviceContext* dc, int plan, const Plan& p,
                 const std::vector<Dispatch>& dispatches, OpProfile* profile);

 private:
  VkQueryPool pool_ = VK_NULL_HANDLE;
  std::vector<uint32_t> first_query_;  // per plan: its start timestamp's query
  std::vector<uint32_t> query_count_;  // per plan: its dispatches + 1
  std::vector<uint64_t> ticks_;        // the results of the largest plan's queries
  std::vector<double> op_seconds_;     // per op of the plan being collected
  uint64_t tick_mask_ = 0;
  double seconds_per_tick_ = 0.0;
};

}  // namespace staticlm::vulkan
