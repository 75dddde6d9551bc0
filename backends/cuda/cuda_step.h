// The step's values as the kernels read them (cuda::StepValues), written by the host into
// pinned memory before each graph launch.
#pragma once

#include "backends/cuda/cuda_ops.h"
#include "contract/plan.h"

namespace staticlm::cuda {

// Run phase. Fills *out from a step already checked against `plan` (CheckStep): the row arrays
// for a rows_are_sequences plan, zeros past n_tokens (and for other plans), so that a value
// left from an earlier step is never read.
void FillStepValues(const Plan& plan, const StepParams& step, StepValues* out);

}  // namespace staticlm::cuda
