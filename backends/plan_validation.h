// Checks a plan against the buffers bound to it before any backend trusts its offsets: every
// tensor inside its buffer, every op with the arity and shapes its kernel expects. Init only.
#pragma once

#include "backends/backend.h"

namespace staticlm {

Status ValidatePlan(const Plan& plan, const BufferBinding& buffers);

// Every dim in 1 … 2^31 and their product at most 2^48: then elements() and bytes() cannot
// overflow. Check it before trusting either on a plan read from a file.
bool TensorShapeInRange(const TensorRegion& t);

}  // namespace staticlm
