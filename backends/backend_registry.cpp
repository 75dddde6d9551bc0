#include "backends/backend_registry.h"

#include <cstring>

#include "backends/cpu/cpu_backend.h"

namespace staticlm {
namespace {

struct Entry {
  const char* name;
  std::unique_ptr<Backend> (*create)();
};

const Entry kBackends[] = {
    {"cpu", [] { return std::unique_ptr<Backend>(new cpu::CpuBackend()); }},
};

}  // namespace

Status CreateBackend(const char* name, std::unique_ptr<Backend>* out) {
  for (const Entry& e : kBackends) {
    if (std::strcmp(e.name, name) == 0) {
      *out = e.create();
      return Status::Ok();
    }
  }
  return Status::Error(StatusCode::kInvalidArgument, "unknown backend '%s' (this build has: cpu)",
                       name);
}

}  // namespace staticlm
