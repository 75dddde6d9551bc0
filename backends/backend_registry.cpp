#include "backends/backend_registry.h"

#include <cstring>

#include "backends/cpu/cpu_backend.h"

namespace staticlm {
namespace {

struct Entry {
  const char* name;
  std::unique_ptr<Backend> (*create)(const BackendOptions& options);
};

const Entry kBackends[] = {
    {"cpu",
     [](const BackendOptions& o) { return std::unique_ptr<Backend>(new cpu::CpuBackend(o)); }},
};

}  // namespace

Status CreateBackend(const char* name, const BackendOptions& options,
                     std::unique_ptr<Backend>* out) {
  for (const Entry& e : kBackends) {
    if (std::strcmp(e.name, name) == 0) {
      *out = e.create(options);
      return Status::Ok();
    }
  }
  return Status::Error(StatusCode::kInvalidArgument, "unknown backend '%s' (this build has: cpu)",
                       name);
}

const char* BackendKernelChoice(const char* name, const BackendOptions& options) {
  if (std::strcmp(name, "cpu") == 0) return cpu::CpuBackend::KernelChoice(options);
  return "";
}

}  // namespace staticlm
