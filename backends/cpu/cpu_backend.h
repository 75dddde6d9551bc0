// The CPU backend: walks the plan op by op. Matrix products use the fastest kernel the CPU
// supports (chosen at Prepare) unless the reference kernels are requested; matrix products and
// attention are split over a thread pool created at Prepare. Every output element is computed
// by one task in a fixed order, so results do not depend on the thread count.
#pragma once

#include <cstdio>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/fast_attention.h"
#include "backends/cpu/fast_elementwise.h"
#include "backends/cpu/fast_matmul.h"
#include "backends/cpu/matmul_int8.h"
#include "backends/cpu/packed_weights.h"
#include "backends/cpu/rope_angles.h"
#include "platform/thread_pool.h"

namespace staticlm::cpu {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const BackendOptions& options) : options_(options) {}
  // The matmul ISA Prepare would use with `options` on this CPU ("reference", "avx2", ...): the
  // best the CPU has within options.isa (backends/cpu/cpu_isa.h).
  static const char* KernelChoice(const BackendOptions& options);
  // Init only: the bytes Prepare with `options` would allocate for packed copies of weights
  // (packed_weights.h): the Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q6_K, Q4_K, Q5_K matrices of products
  // with int8 activations, when this CPU's integer kernels (AVX2, AVX-512 VNNI) stream the packed
  // layout. 0 otherwise.
  static uint64_t PackedWeightBytes(const Plan* const* plans, int n_plans,
                                    const BackendOptions& options);
  const char* name() const override { return "cpu"; }
  const char* description() const override { return description_; }
  Status Prepare(const Plan* const* plans, int n_plans, const BufferBinding& buffers) override;
  Status Execute(int plan_index, const StepParams& step) override;
  Status ReadBuffer(BufferId id, uint64_t offset, uint64_t bytes, void* dst) override;
  Status WriteBuffer(BufferId id, uint64_t offset, uint64_t bytes, const void* src) override;
  Status CopyWithinBuffer(BufferId id, uint64_t src_offset, uint64_t dst_offset,
                          uint64_t bytes) override;

  double sync_seconds() const override { return pool_.wait_seconds(); }
  void ResetSyncSeconds() override { pool_.ResetWaitSeconds(); }
  const OpProfile* op_profile() const override {
    return options_.profile_ops ? &op_profile_ : nullptr;
  }
  void ResetOpProfile() override { op_profile_.Reset(); }

 private:
  // A plan with its tensors' addresses, resolved at Prepare.
  struct BoundPlan {
    const Plan* plan = nullptr;
    std::vector<uint8_t*> addresses;  // one per plan tensor
  };

  Status ChooseMatMul(MatMulIsa* isa);
  Status PrepareElementwise(bool reference);
  Status PrepareQuantizedActivations(bool reference);
  Status PreparePackedWeights();
  void RunOp(const BoundPlan& b, const Op& op, const StepParams& step);
  void RunMatMul(const BoundPlan& b, const Op& op, int64_t rows);
  void RunAttention(const BoundPlan& b, const Op& op, const StepParams& step, int64_t rows);
  // `factors`: the op's frequency factors, or null.
  void RunRope(const Op& op, const StepParams& step, int64_t rows, int64_t width,
               const float* factors, float* x);

  // The host memory of `id` at [offset, offset + bytes), or nullptr when out of bounds or not
  // host-writable (the weights).
  uint8_t* HostRange(BufferId id, uint64_t offset, uint64_t bytes) const;

  BackendOptions options_;
  OpProfile op_profile_;  // recorded only with options_.profile_ops
  CpuFeatures features_;  // those the kernel selectors may use under the chosen ISA (--isa)
  BufferBinding buffers_;
  std::vector<BoundPlan> plans_;
  MatMulRangeFn matmul_ = nullptr;
  IntKernels int_kernels_{};      // integer-activation products when chosen (matmul null: off)
  QuantizedBuffer x_quantized_;   // the running product's quantized x, sized at Prepare
  PackedWeights packed_weights_;  // packed matrices for int_kernels_.packed_matmul
  AttentionFn attention_ = nullptr;
  bool attention_groups_ = false;  // attention_ is fastest given whole KV-head groups
  // attention_'s parts for decode rows split over their keys (attention_split.h), or null; their
  // buffer holds a step's rows × heads × kMaxAttentionSplits parts, sized at Prepare.
  AttentionPartFn attention_part_ = nullptr;
  std::vector<float> attention_parts_;
  ElementwiseKernels elementwise_{};
  RopeAngles rope_angles_;
  bool reference_rope_ = true;
  ThreadPool pool_;
  char description_[256] = "cpu (not prepared)";
};

}  // namespace staticlm::cpu
