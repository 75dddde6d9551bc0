// alloc_counter: counts heap allocations, frees and thread creations in a window of time, so a
// test or the CLI can prove that the run phase does none of them.
//
// alloc_counter.cpp replaces malloc, calloc, realloc, reallocarray, free, aligned_alloc,
// posix_memalign, memalign, valloc, pvalloc, every global operator new/delete and
// pthread_create for the whole process. Each replacement forwards to glibc (__libc_malloc and
// friends; pthread_create through dlsym(RTLD_NEXT)) and, between Start() and Stop(), counts
// the call. It is linked only into executables that report or assert the count (the CLI,
// tests/no_heap_after_init_test, tests/alloc_counter_test), never into the library.
//
// Sanitizer builds (STATICLM_SANITIZE) replace malloc themselves, so there alloc_counter.cpp
// defines no replacements: Available() is false, Start()/Stop() do nothing and every count is 0.
//
// Events inside a device driver (driver_scope.h: a Vulkan command, a thread the driver made)
// are counted apart from the rest, so "staticlm made no allocation" and "the driver made n"
// are separate figures.
//
// Every call here is thread-safe. Counting covers all threads. free(nullptr) and
// delete nullptr are not counted. Allocations made by the counter itself (capturing a
// backtrace, resolving pthread_create) are never counted.
#pragma once

#include <cstddef>
#include <cstdint>

namespace staticlm::alloc_counter {

// False in sanitizer builds, where nothing is counted.
bool Available();

// Resets every count and the first-event record, then starts counting. Warms up what would
// otherwise allocate lazily on the first counted event (backtrace(), dlsym). May allocate
// (the warm-up), but those allocations happen before counting starts.
void Start();

// Stops counting; the counts and the first-event record keep their values. Never allocates.
void Stop();

// Counts since the last Start() of events outside any driver (driver_scope.h): staticlm's own,
// and the application's around it. Never allocate.
uint64_t Allocations();     // malloc, calloc, realloc, reallocarray, the aligned forms, new
uint64_t Frees();           // free and delete of a non-null pointer
uint64_t ThreadsCreated();  // pthread_create (std::thread goes through it)
uint64_t Events();          // the sum of the three above

// staticlm's blocks allocated minus those freed since Start() (realloc of a live block counts
// 0): a sequence that ends where it started, with this back at 0, leaked nothing. Never
// allocates.
int64_t LiveBlocks();

// Fault injection, for tests: staticlm's n-th allocation after Start() (1-based; events inside
// a driver are not numbered) fails as a real one would — the malloc family returns null with
// errno ENOMEM (posix_memalign returns it), operator new throws std::bad_alloc (its nothrow
// forms return null); the old block of a failed realloc stays valid. 0 turns it off. Stays set
// across Start() calls. Does nothing where counting is unavailable.
void FailAllocation(uint64_t n);

// The same for events inside a driver: on a thread inside a driver_scope::Scope (a Vulkan
// command), or on a thread a driver created. Reported beside staticlm's, never added to them.
uint64_t DriverAllocations();
uint64_t DriverFrees();
uint64_t DriverThreadsCreated();
uint64_t DriverEvents();

// Writes a NUL-terminated description of staticlm's first event since Start() — its kind,
// size and a symbolized backtrace, one frame a line — into `out` (truncated to `capacity`).
// Writes "no event" when nothing was counted. Symbolizing may allocate (demangling), so call
// it after Stop(); its own allocations are never counted. Frames in the executable get names
// only if it was linked with -rdynamic; otherwise they read "module+0xoffset" (feed it to
// addr2line -e module).
void DescribeFirstEvent(char* out, size_t capacity);

}  // namespace staticlm::alloc_counter
