#include "backends/cuda/cuda_step.h"

namespace staticlm::cuda {

void FillStepValues(const Plan& plan, const StepParams& step, StepValues* out) {
  out->n_tokens = step.n_tokens;
  out->position = step.position;
  out->sequence = step.sequence;
  out->reserved = 0;
  const bool by_row = plan.limits.rows_are_sequences;
  for (int32_t r = 0; r < kMaxBatch; ++r) {
    const bool used = by_row && r < step.n_tokens;
    out->row_sequences[r] = used ? step.row_sequences[r] : 0;
    out->row_positions[r] = used ? step.row_positions[r] : 0;
  }
}

}  // namespace staticlm::cuda
