// The CPU backend: walks the plan op by op. Matrix products use the fastest kernel the CPU
// supports (chosen at Prepare) unless the reference kernels are requested; matrix products and
// attention are split over a thread pool created at Prepare. Every output element is computed
// by one task in a fixed order, so results do not depend on the thread count.
#pragma once

#include <cstdio>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/fast_matmul.h"
#include "platform/thread_pool.h"

namespace staticlm::cpu {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const BackendOptions& options) : options_(options) {}
  const char* name() const override { return "cpu"; }
  const char* description() const override { return description_; }
  Status Prepare(const Plan& plan, const BufferBinding& buffers) override;
  Status Execute(const StepParams& step) override;

  // Seconds the caller waited for workers since the last reset (synchronisation cost).
  double sync_seconds() const { return pool_.wait_seconds(); }
  void ResetSyncSeconds() { pool_.ResetWaitSeconds(); }

 private:
  void RunOp(const Op& op, const StepParams& step);
  void RunMatMul(const Op& op, int64_t rows);
  void RunAttention(const Op& op, const StepParams& step, int64_t rows);
  uint8_t* Address(uint32_t tensor) const { return addresses_[tensor]; }

  BackendOptions options_;
  const Plan* plan_ = nullptr;
  std::vector<uint8_t*> addresses_;  // one per plan tensor, resolved at Prepare
  MatMulRangeFn matmul_ = nullptr;
  ThreadPool pool_;
  char description_[160] = "cpu (not prepared)";
};

}  // namespace staticlm::cpu
