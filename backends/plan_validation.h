// Checks a plan against the buffers bound to it before any backend trusts its offsets: every
// tensor inside its buffer, every op with the arity and shapes its kernel expects. Init only.
#pragma once

#include "backends/backend.h"

namespace staticlm {

Status ValidatePlan(const Plan& plan, const BufferBinding& buffers);

}  // namespace staticlm
