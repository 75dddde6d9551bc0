// The CPU backend: walks the plan op by op, calling the reference kernels.
#pragma once

#include <vector>

#include "backends/backend.h"

namespace staticlm::cpu {

class CpuBackend final : public Backend {
 public:
  const char* name() const override { return "cpu"; }
  Status Prepare(const Plan& plan, const BufferBinding& buffers) override;
  Status Execute(const StepParams& step) override;

 private:
  void RunOp(const Op& op, const StepParams& step);
  uint8_t* Address(uint32_t tensor) const { return addresses_[tensor]; }

  const Plan* plan_ = nullptr;
  std::vector<uint8_t*> addresses_;  // one per plan tensor, resolved at Prepare
};

}  // namespace staticlm::cpu
