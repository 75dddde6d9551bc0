// driver_scope: marks the time a thread spends inside a device driver (every Vulkan command,
// the Vulkan loader's dlopen) and the threads a driver creates, so the heap-event counter
// (alloc_counter.h) can tell the driver's allocations from staticlm's own.
//
// Why: lavapipe allocates on the heap inside vkQueueSubmit and on its worker threads at every
// step. Those are not staticlm's allocations and staticlm cannot avoid them by planning; a
// single process-wide count would either hide staticlm's own allocations among them or pass
// the driver's off as staticlm's. With the scope, "heap_allocs_after_init" is staticlm's alone
// and the driver's count is reported beside it.
//
// A thread is inside a driver while a Scope lives on it, and for its whole life if a driver
// created it (alloc_counter's pthread_create marks a thread started from inside a Scope). Any
// thread may use it; it never allocates and costs one thread-local increment and decrement.
#pragma once

namespace staticlm::driver_scope {

// True while the calling thread runs driver code (see above).
bool InDriver();

// Marks the calling thread as a driver's for the rest of its life. For alloc_counter's
// thread-start trampoline; nothing else should call it.
void MarkThreadAsDriverOwned();

// RAII: the calling thread is inside a driver from construction to destruction. Nests.
class Scope {
 public:
  Scope();
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
};

}  // namespace staticlm::driver_scope
