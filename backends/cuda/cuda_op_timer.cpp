#include "backends/cuda/cuda_op_timer.h"

#include "backends/cuda/cuda_ops.h"

namespace staticlm::cuda {
namespace {

// For each op of `p` that starts a launch, the end of the ops sharing it (JoinsPreviousLaunch).
std::vector<uint32_t> LaunchEnds(const Plan& p) {
  std::vector<uint32_t> end(p.ops.size(), 0);
  for (size_t first = 0; first < p.ops.size();) {
    size_t last = first + 1;
    while (last < p.ops.size() && JoinsPreviousLaunch(p, p.ops[last])) ++last;
    end[first] = static_cast<uint32_t>(last);
    first = last;
  }
  return end;
}

}  // namespace

Status OpTimer::Prepare(const Plan* const* plans, int n_plans) {
  Destroy();
  events_.resize(static_cast<size_t>(n_plans));
  launch_end_.resize(static_cast<size_t>(n_plans));
  for (int i = 0; i < n_plans; ++i) {
    launch_end_[static_cast<size_t>(i)] = LaunchEnds(*plans[i]);
    std::vector<cudaEvent_t>& events = events_[static_cast<size_t>(i)];
    events.reserve(plans[i]->ops.size() + 1);
    for (size_t e = 0; e <= plans[i]->ops.size(); ++e) {
      cudaEvent_t event = nullptr;
      const cudaError_t made = cudaEventCreate(&event);
      if (made != cudaSuccess) {
        Destroy();
        return Status::Error(StatusCode::kInternal,
                             "CUDA: creating the op timer's events failed (%s)",
                             cudaGetErrorString(made));
      }
      events.push_back(event);
    }
  }
  return Status::Ok();
}

void OpTimer::Destroy() {
  for (std::vector<cudaEvent_t>& events : events_) {
    for (cudaEvent_t event : events) (void)cudaEventDestroy(event);
  }
  events_.clear();
  launch_end_.clear();
}

Status OpTimer::Collect(int plan, const Plan& p, OpProfile* profile) const {
  const std::vector<cudaEvent_t>& events = events_[static_cast<size_t>(plan)];
  const std::vector<uint32_t>& launch_end = launch_end_[static_cast<size_t>(plan)];
  for (size_t first = 0; first < p.ops.size();) {
    // Ops whose work the launch of an op before them did (JoinsPreviousLaunch) enqueued
    // nothing: they share that launch's time with it.
    const size_t end = launch_end[first];
    float ms = 0.0f;
    const cudaError_t e = cudaEventElapsedTime(&ms, events[first], events[end]);
    if (e != cudaSuccess) {
      return Status::Error(StatusCode::kInternal, "CUDA: reading the op timer's events failed (%s)",
                           cudaGetErrorString(e));
    }
    const double seconds = static_cast<double>(ms) * 1e-3 / static_cast<double>(end - first);
    for (; first < end; ++first) profile->Add(p, p.ops[first], seconds);
  }
  return Status::Ok();
}

}  // namespace staticlm::cuda
