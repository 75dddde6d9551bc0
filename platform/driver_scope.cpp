#include "platform/driver_scope.h"

namespace staticlm::driver_scope {
namespace {

// Depth of driver calls on this thread; a driver-owned thread starts at 1 and never leaves.
// Constant-initialised, so reading it from inside malloc never allocates.
thread_local int t_depth = 0;

}  // namespace

bool InDriver() {
  return t_depth > 0;
}

void MarkThreadAsDriverOwned() {
  ++t_depth;
}

Scope::Scope() {
  ++t_depth;
}

Scope::~Scope() {
  --t_depth;
}

}  // namespace staticlm::driver_scope
