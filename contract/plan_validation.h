// Checks a plan against the buffers bound to it before any backend trusts its offsets: every
// tensor inside its buffer, every op with the arity and shapes its kernel expects. Init only.
#pragma once

#include "contract/plan.h"
#include "platform/status.h"

namespace staticlm {

Status ValidatePlan(const Plan& plan, const BufferBinding& buffers);

// Run phase: whether `step` fits `plan` (token count, sequence ids, positions within the
// context), so that no kernel reads or writes outside its tensors. kInvalidArgument, or
// kContextFull for a position past a Static cache; static messages.
Status CheckStep(const Plan& plan, const StepParams& step);

// Every dim in 1 … 2^31 and their product at most 2^48: then elements() and bytes() cannot
// overflow. Check it before trusting either on a plan read from a file.
bool TensorShapeInRange(const TensorRegion& t);

}  // namespace staticlm
