// The backends this build holds, by name. A fixed table: nothing registers at run time.
#pragma once

#include <memory>

#include "backends/backend.h"

namespace staticlm {

// Init only. Creates the backend called `name` ("cpu"); an unknown name is kInvalidArgument
// listing the names this build knows.
Status CreateBackend(const char* name, const BackendOptions& options,
                     std::unique_ptr<Backend>* out);

}  // namespace staticlm
