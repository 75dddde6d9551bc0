// Replaces the process's allocation functions and pthread_create with counting forwarders.
// See alloc_counter.h. Everything here may run before main() and inside any allocation, so
// state is constant-initialized atomics and one initial-exec thread_local (no lazy TLS
// allocation), and nothing on the counting path allocates.
#include "platform/alloc_counter.h"

#include "platform/driver_scope.h"

#include <cstdarg>
#include <cstdio>

#if defined(STATICLM_SANITIZE)

namespace staticlm::alloc_counter {

bool Available() {
  return false;
}
void Start() {}
void Stop() {}
uint64_t Allocations() {
  return 0;
}
uint64_t Frees() {
  return 0;
}
uint64_t ThreadsCreated() {
  return 0;
}
uint64_t Events() {
  return 0;
}
int64_t LiveBlocks() {
  return 0;
}
void FailAllocation(uint64_t) {}
uint64_t DriverAllocations() {
  return 0;
}
uint64_t DriverFrees() {
  return 0;
}
uint64_t DriverThreadsCreated() {
  return 0;
}
uint64_t DriverEvents() {
  return 0;
}
void DescribeFirstEvent(char* out, size_t capacity) {
  if (out != nullptr && capacity > 0) {
    std::snprintf(out, capacity, "unavailable: sanitizers replace malloc in this build");
  }
}

}  // namespace staticlm::alloc_counter

#else  // !STATICLM_SANITIZE

#include <cxxabi.h>
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <malloc.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

// glibc's own allocator entry points, which the replacements forward to.
extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* ptr, size_t size);
void __libc_free(void* ptr);
void* __libc_memalign(size_t alignment, size_t size);
void* __libc_valloc(size_t size);
void* __libc_pvalloc(size_t size);
}

namespace staticlm::alloc_counter {
namespace {

enum class Kind {
  kMalloc,
  kCalloc,
  kRealloc,
  kReallocArray,
  kAlignedAlloc,
  kPosixMemalign,
  kMemalign,
  kValloc,
  kPvalloc,
  kNew,
  kNewArray,
  kFree,
  kDelete,
  kDeleteArray,
  kPthreadCreate,
};

const char* KindName(Kind kind) {
  switch (kind) {
    case Kind::kMalloc:
      return "malloc";
    case Kind::kCalloc:
      return "calloc";
    case Kind::kRealloc:
      return "realloc";
    case Kind::kReallocArray:
      return "reallocarray";
    case Kind::kAlignedAlloc:
      return "aligned_alloc";
    case Kind::kPosixMemalign:
      return "posix_memalign";
    case Kind::kMemalign:
      return "memalign";
    case Kind::kValloc:
      return "valloc";
    case Kind::kPvalloc:
      return "pvalloc";
    case Kind::kNew:
      return "operator new";
    case Kind::kNewArray:
      return "operator new[]";
    case Kind::kFree:
      return "free";
    case Kind::kDelete:
      return "operator delete";
    case Kind::kDeleteArray:
      return "operator delete[]";
    case Kind::kPthreadCreate:
      return "pthread_create";
  }
  return "unknown";
}

constexpr int kMaxFrames = 48;

struct FirstEvent {
  Kind kind;
  size_t size;
  int frame_count;
  void* frames[kMaxFrames];
};

// What an event is, for the counts: an allocation, a free or a thread creation.
enum Count { kAllocation, kFree, kThread, kCounts };

std::atomic<bool> g_counting{false};
std::atomic<uint64_t> g_own[kCounts];     // staticlm's (and the application's) events
std::atomic<uint64_t> g_driver[kCounts];  // events inside a driver (driver_scope.h)
// Fault injection: staticlm's allocation number g_fail_at (1-based) fails; 0: none.
std::atomic<uint64_t> g_fail_at{0};
// staticlm's blocks allocated minus blocks freed since Start().
std::atomic<int64_t> g_live{0};
// The first counted event is claimed by exactly one thread, which fills g_first and then
// publishes it through g_first_ready.
std::atomic<bool> g_first_claimed{false};
std::atomic<bool> g_first_ready{false};
FirstEvent g_first;

// Non-zero while this thread runs the counter's own code, whose allocations must not count
// (and must not recurse into capturing another backtrace).
thread_local int t_inside __attribute__((tls_model("initial-exec"))) = 0;

class Inside {
 public:
  Inside() { ++t_inside; }
  ~Inside() { --t_inside; }
  Inside(const Inside&) = delete;
  Inside& operator=(const Inside&) = delete;
};

// Counts one event; the first of staticlm's own also gets its backtrace. Events inside a
// driver only count. Returns true when the caller must fail this allocation (injected).
__attribute__((noinline)) bool Record(Kind kind, size_t size, Count count) {
  if (!g_counting.load(std::memory_order_relaxed) || t_inside != 0) return false;
  if (driver_scope::InDriver()) {
    g_driver[count].fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  const uint64_t number = g_own[count].fetch_add(1, std::memory_order_relaxed) + 1;
  const bool fail = count == kAllocation && number == g_fail_at.load(std::memory_order_relaxed);
  if (g_first_claimed.exchange(true, std::memory_order_acq_rel)) return fail;
  Inside inside;
  g_first.kind = kind;
  g_first.size = size;
  g_first.frame_count = backtrace(g_first.frames, kMaxFrames);
  g_first_ready.store(true, std::memory_order_release);
  return fail;
}

// Tracks staticlm's live blocks: `delta` when counting and outside any driver.
void CountLive(int64_t delta) {
  if (!g_counting.load(std::memory_order_relaxed) || t_inside != 0 || driver_scope::InDriver()) {
    return;
  }
  g_live.fetch_add(delta, std::memory_order_relaxed);
}

// The result of an allocation function: counts a block that exists now.
void* Allocated(void* p) {
  if (p != nullptr) CountLive(1);
  return p;
}

// What an allocation function returns when its allocation is made to fail.
void* Refused() {
  errno = ENOMEM;
  return nullptr;
}

using PthreadCreateFn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
std::atomic<PthreadCreateFn> g_real_pthread_create{nullptr};

PthreadCreateFn RealPthreadCreate() {
  PthreadCreateFn fn = g_real_pthread_create.load(std::memory_order_acquire);
  if (fn == nullptr) {
    Inside inside;  // dlsym may allocate
    fn = reinterpret_cast<PthreadCreateFn>(dlsym(RTLD_NEXT, "pthread_create"));
    g_real_pthread_create.store(fn, std::memory_order_release);
  }
  return fn;
}

// What pthread_create passes to a thread a driver starts (allocated with __libc_malloc, which
// nothing counts, and freed by the thread).
struct DriverThreadStart {
  void* (*start)(void*);
  void* arg;
};

void* StartDriverThread(void* p) {
  DriverThreadStart launch = *static_cast<DriverThreadStart*>(p);
  __libc_free(p);
  driver_scope::MarkThreadAsDriverOwned();
  return launch.start(launch.arg);
}

bool IsPowerOfTwo(size_t x) {
  return x != 0 && (x & (x - 1)) == 0;
}

[[noreturn]] void ThrowBadAlloc() {
#if defined(__cpp_exceptions)
  throw std::bad_alloc();
#else
  std::abort();
#endif
}

// The loop of [new.delete.single]: retry through the new-handler until it gives up.
void* NewImpl(size_t size, size_t alignment, Kind kind, bool nothrow) {
  if (Record(kind, size, kAllocation)) {
    if (nothrow) return nullptr;
    ThrowBadAlloc();
  }
  if (size == 0) size = 1;
  for (;;) {
    void* p = alignment == 0 ? __libc_malloc(size) : __libc_memalign(alignment, size);
    if (p != nullptr) return Allocated(p);
    std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) {
      if (nothrow) return nullptr;
      ThrowBadAlloc();
    }
    handler();
  }
}

void DeleteImpl(void* p, Kind kind) {
  if (p == nullptr) return;
  Record(kind, 0, kFree);
  CountLive(-1);
  __libc_free(p);
}

// Appends printf-style text to a fixed buffer, truncating at its end.
class Writer {
 public:
  Writer(char* out, size_t capacity) : out_(out), capacity_(capacity) { out_[0] = '\0'; }
  __attribute__((format(printf, 2, 3))) void Append(const char* format, ...) {
    if (used_ + 1 >= capacity_) return;
    va_list args;
    va_start(args, format);
    int n = std::vsnprintf(out_ + used_, capacity_ - used_, format, args);
    va_end(args);
    if (n > 0) used_ = std::min(capacity_ - 1, used_ + static_cast<size_t>(n));
  }

 private:
  char* out_;
  size_t capacity_;
  size_t used_ = 0;
};

const char* BaseName(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash != nullptr ? slash + 1 : path;
}

void DescribeFrame(Writer& w, int index, void* address) {
  Dl_info info;
  if (dladdr(address, &info) == 0 || info.dli_fname == nullptr) {
    w.Append("  #%d %p\n", index, address);
    return;
  }
  const auto at = reinterpret_cast<uintptr_t>(address);
  if (info.dli_sname == nullptr) {
    w.Append("  #%d %s+0x%zx\n", index, info.dli_fname,
             static_cast<size_t>(at - reinterpret_cast<uintptr_t>(info.dli_fbase)));
    return;
  }
  int demangle_status = -1;
  char* demangled = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &demangle_status);
  w.Append("  #%d %s+0x%zx (%s)\n", index, demangle_status == 0 ? demangled : info.dli_sname,
           static_cast<size_t>(at - reinterpret_cast<uintptr_t>(info.dli_saddr)),
           BaseName(info.dli_fname));
  std::free(demangled);
}

}  // namespace

bool Available() {
  return true;
}

void Start() {
  g_counting.store(false, std::memory_order_seq_cst);
  {
    Inside inside;
    void* frames[4];
    backtrace(frames, 4);  // the first call loads libgcc_s, which allocates
    RealPthreadCreate();
  }
  for (int c = 0; c < kCounts; ++c) {
    g_own[c].store(0, std::memory_order_relaxed);
    g_driver[c].store(0, std::memory_order_relaxed);
  }
  g_live.store(0, std::memory_order_relaxed);
  g_first_ready.store(false, std::memory_order_relaxed);
  g_first_claimed.store(false, std::memory_order_relaxed);
  g_counting.store(true, std::memory_order_seq_cst);
}

void Stop() {
  g_counting.store(false, std::memory_order_seq_cst);
}

uint64_t Allocations() {
  return g_own[kAllocation].load(std::memory_order_relaxed);
}
uint64_t Frees() {
  return g_own[kFree].load(std::memory_order_relaxed);
}
uint64_t ThreadsCreated() {
  return g_own[kThread].load(std::memory_order_relaxed);
}
uint64_t Events() {
  return Allocations() + Frees() + ThreadsCreated();
}
int64_t LiveBlocks() {
  return g_live.load(std::memory_order_relaxed);
}
void FailAllocation(uint64_t n) {
  g_fail_at.store(n, std::memory_order_relaxed);
}
uint64_t DriverAllocations() {
  return g_driver[kAllocation].load(std::memory_order_relaxed);
}
uint64_t DriverFrees() {
  return g_driver[kFree].load(std::memory_order_relaxed);
}
uint64_t DriverThreadsCreated() {
  return g_driver[kThread].load(std::memory_order_relaxed);
}
uint64_t DriverEvents() {
  return DriverAllocations() + DriverFrees() + DriverThreadsCreated();
}

void DescribeFirstEvent(char* out, size_t capacity) {
  if (out == nullptr || capacity == 0) return;
  Inside inside;
  Writer w(out, capacity);
  if (!g_first_ready.load(std::memory_order_acquire)) {
    w.Append("no event");
    return;
  }
  w.Append("%s of %zu bytes\n", KindName(g_first.kind), g_first.size);
  // Frame 0 is Record itself; the listing starts at the interposed function.
  for (int i = 1; i < g_first.frame_count; ++i) DescribeFrame(w, i - 1, g_first.frames[i]);
}

}  // namespace staticlm::alloc_counter

namespace ac = staticlm::alloc_counter;
using ac::Kind;

extern "C" {

void* malloc(size_t size) noexcept {
  if (ac::Record(Kind::kMalloc, size, ac::kAllocation)) return ac::Refused();
  return ac::Allocated(__libc_malloc(size));
}

void* calloc(size_t count, size_t size) noexcept {
  if (ac::Record(Kind::kCalloc, count * size, ac::kAllocation)) return ac::Refused();
  return ac::Allocated(__libc_calloc(count, size));
}

// Counted as one allocation, whatever it does to the old block.
void* realloc(void* ptr, size_t size) noexcept {
  if (ac::Record(Kind::kRealloc, size, ac::kAllocation)) return ac::Refused();
  void* p = __libc_realloc(ptr, size);
  if (ptr == nullptr && p != nullptr) ac::CountLive(1);  // a new block
  if (ptr != nullptr && size == 0) ac::CountLive(-1);    // glibc freed it
  return p;
}

void* reallocarray(void* ptr, size_t count, size_t size) noexcept {
  size_t bytes = 0;
  if (__builtin_mul_overflow(count, size, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  if (ac::Record(Kind::kReallocArray, bytes, ac::kAllocation)) return ac::Refused();
  void* p = __libc_realloc(ptr, bytes);
  if (ptr == nullptr && p != nullptr) ac::CountLive(1);
  if (ptr != nullptr && bytes == 0) ac::CountLive(-1);
  return p;
}

void free(void* ptr) noexcept {
  if (ptr == nullptr) return;
  ac::Record(Kind::kFree, 0, ac::kFree);
  ac::CountLive(-1);
  __libc_free(ptr);
}

void* aligned_alloc(size_t alignment, size_t size) noexcept {
  if (ac::Record(Kind::kAlignedAlloc, size, ac::kAllocation)) return ac::Refused();
  return ac::Allocated(__libc_memalign(alignment, size));
}

int posix_memalign(void** out, size_t alignment, size_t size) noexcept {
  if (alignment % sizeof(void*) != 0 || !ac::IsPowerOfTwo(alignment)) return EINVAL;
  if (ac::Record(Kind::kPosixMemalign, size, ac::kAllocation)) return ENOMEM;
  void* p = ac::Allocated(__libc_memalign(alignment, size));
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}

void* memalign(size_t alignment, size_t size) noexcept {
  if (ac::Record(Kind::kMemalign, size, ac::kAllocation)) return ac::Refused();
  return ac::Allocated(__libc_memalign(alignment, size));
}

void* valloc(size_t size) noexcept {
  if (ac::Record(Kind::kValloc, size, ac::kAllocation)) return ac::Refused();
  return ac::Allocated(__libc_valloc(size));
}

void* pvalloc(size_t size) noexcept {
  if (ac::Record(Kind::kPvalloc, size, ac::kAllocation)) return ac::Refused();
  return ac::Allocated(__libc_pvalloc(size));
}

// A thread started from inside a driver is the driver's for its whole life: its start routine
// runs behind ac::StartDriverThread, which marks it first.
int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*),
                   void* arg) noexcept {
  ac::Record(Kind::kPthreadCreate, 0, ac::kThread);
  ac::PthreadCreateFn real = ac::RealPthreadCreate();
  if (real == nullptr) return EAGAIN;
  if (!staticlm::driver_scope::InDriver()) return real(thread, attr, start, arg);
  auto* launch = static_cast<ac::DriverThreadStart*>(__libc_malloc(sizeof(ac::DriverThreadStart)));
  if (launch == nullptr) return EAGAIN;
  *launch = {start, arg};
  int result = real(thread, attr, ac::StartDriverThread, launch);
  if (result != 0) __libc_free(launch);
  return result;
}

}  // extern "C"

void* operator new(size_t size) {
  return ac::NewImpl(size, 0, Kind::kNew, false);
}
void* operator new[](size_t size) {
  return ac::NewImpl(size, 0, Kind::kNewArray, false);
}
void* operator new(size_t size, const std::nothrow_t&) noexcept {
  return ac::NewImpl(size, 0, Kind::kNew, true);
}
void* operator new[](size_t size, const std::nothrow_t&) noexcept {
  return ac::NewImpl(size, 0, Kind::kNewArray, true);
}
void* operator new(size_t size, std::align_val_t alignment) {
  return ac::NewImpl(size, static_cast<size_t>(alignment), Kind::kNew, false);
}
void* operator new[](size_t size, std::align_val_t alignment) {
  return ac::NewImpl(size, static_cast<size_t>(alignment), Kind::kNewArray, false);
}
void* operator new(size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  return ac::NewImpl(size, static_cast<size_t>(alignment), Kind::kNew, true);
}
void* operator new[](size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  return ac::NewImpl(size, static_cast<size_t>(alignment), Kind::kNewArray, true);
}

void operator delete(void* p) noexcept {
  ac::DeleteImpl(p, Kind::kDelete);
}
void operator delete[](void* p) noexcept {
  ac::DeleteImpl(p, Kind::kDeleteArray);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  ac::DeleteImpl(p, Kind::kDelete);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  ac::DeleteImpl(p, Kind::kDeleteArray);
}
void operator delete(void* p, size_t) noexcept {
  ac::DeleteImpl(p, Kind::kDelete);
}
void operator delete[](void* p, size_t) noexcept {
  ac::DeleteImpl(p, Kind::kDeleteArray);
}
void operator delete(void* p, std::align_val_t) noexcept {
  ac::DeleteImpl(p, Kind::kDelete);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  ac::DeleteImpl(p, Kind::kDeleteArray);
}
void operator delete(void* p, size_t, std::align_val_t) noexcept {
  ac::DeleteImpl(p, Kind::kDelete);
}
void operator delete[](void* p, size_t, std::align_val_t) noexcept {
  ac::DeleteImpl(p, Kind::kDeleteArray);
}
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  ac::DeleteImpl(p, Kind::kDelete);
}
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  ac::DeleteImpl(p, Kind::kDeleteArray);
}

#endif  // STATICLM_SANITIZE
