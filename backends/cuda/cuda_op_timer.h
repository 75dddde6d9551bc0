// Device time per plan op, for staticlm_limits.profile_ops on the CUDA backend. Each plan's
// graph is captured with a CUDA event recorded before its first op and after every op; after a
// step's synchronisation, the time between consecutive events is added to the backend's
// OpProfile, one call per op of the plan (a launch that does the work of several ops,
// cuda_ops.h's JoinsPreviousLaunch, gives each an equal share).
//
// What a row then holds: the device's time from the end of the previous op to the end of this
// one, its launch included. An event between two kernels ends programmatic dependent launch
// (the next kernel can no longer start while the previous one runs), so a backend that times its
// ops captures every graph without it: its steps are slower than untimed ones, and the profile
// says where a step's time goes with each kernel's launch paid in full. Events resolve about
// half a microsecond; summed over many steps the rows are still comparable. Sampling on the
// device is not timed.
//
// Everything is created at init (Prepare: the events of every plan); recording happens inside
// the graphs; Collect, in the run phase, only reads the events and allocates nothing.
#pragma once

#include <cuda_runtime.h>

#include <vector>

#include "backends/op_profile.h"
#include "contract/plan.h"
#include "platform/status.h"

namespace staticlm::cuda {

class OpTimer {
 public:
  OpTimer() = default;
  ~OpTimer() { Destroy(); }
  OpTimer(const OpTimer&) = delete;
  OpTimer& operator=(const OpTimer&) = delete;

  // Init: one event more than each plan has ops (timing enabled), and which ops share a launch.
  Status Prepare(const Plan* const* plans, int n_plans);
  // Destroys the events; safe when Prepare never ran or failed halfway.
  void Destroy();
  bool prepared() const { return !events_.empty(); }

  // For graph capture: the events of plan `plan`, [0] before its first op and [i + 1] after op
  // i; null when not prepared.
  const cudaEvent_t* EventsOf(int plan) const {
    return prepared() ? events_[static_cast<size_t>(plan)].data() : nullptr;
  }

  // Run phase, after a step of plan `plan` (`p`) completed on the device: adds each op's time
  // to `profile`. Allocates nothing.
  Status Collect(int plan, const Plan& p, OpProfile* profile) const;

 private:
  std::vector<std::vector<cudaEvent_t>> events_;  // per plan: its ops + 1
  // Per plan and op: the end of the ops that share its launch (JoinsPreviousLaunch), for the
  // first op of a launch; found at Prepare so that Collect walks no plan.
  std::vector<std::vector<uint32_t>> launch_end_;
};

}  // namespace staticlm::cuda
