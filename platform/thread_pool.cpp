#include "platform/thread_pool.h"

#include <pthread.h>
#include <sched.h>

#include "platform/clock.h"

namespace staticlm {
namespace {

// Spinning this many rounds before sleeping keeps back-to-back ops (microseconds apart) off
// the futex path while an idle pool still sleeps.
constexpr int kSpinRounds = 20000;
constexpr int kCallerSpinRounds = 4000;

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

bool PinToCpu(std::thread::native_handle_type handle, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu % CPU_SETSIZE, &set);
  return pthread_setaffinity_np(handle, sizeof(set), &set) == 0;
}

}  // namespace

Status ThreadPool::Start(const ThreadPoolOptions& options, const char** pin_warning) {
  Stop();
  if (options.threads < 1 || options.threads > 256) {
    return Status::Error(StatusCode::kInvalidArgument, "threads %d is outside 1..256",
                         options.threads);
  }
  options_ = options;
  stopping_ = false;
  *pin_warning = nullptr;
  workers_.reserve(static_cast<size_t>(options.threads - 1));
  for (int i = 1; i < options.threads; ++i) {
    workers_.emplace_back([this, i] { WorkerLoop(i); });
  }
  if (options.pin) {
    bool ok = PinToCpu(pthread_self(), 0);
    for (size_t i = 0; i < workers_.size(); ++i) {
      ok = PinToCpu(workers_[i].native_handle(), static_cast<int>(i + 1)) && ok;
    }
    if (!ok) *pin_warning = "could not pin every thread to its core; running unpinned";
  }
  return Status::Ok();
}

void ThreadPool::Stop() {
  if (workers_.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
}

void ThreadPool::RunTasks() {
  for (int t = next_task_.fetch_add(1); t < n_tasks_; t = next_task_.fetch_add(1)) fn_(user_, t);
}

void ThreadPool::WorkerLoop(int /*index*/) {
  uint64_t seen = 0;
  while (true) {
    uint64_t now = generation_.load(std::memory_order_acquire);
    for (int spin = 0; now == seen && (options_.busy_wait || spin < kSpinRounds); ++spin) {
      CpuRelax();
      now = generation_.load(std::memory_order_acquire);
    }
    if (now == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load() != seen; });
      now = generation_.load();
    }
    seen = now;
    if (stopping_) return;
    RunTasks();
    busy_workers_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::ParallelFor(int n_tasks, TaskFn fn, void* user) {
  if (workers_.empty() || n_tasks <= 1) {
    for (int t = 0; t < n_tasks; ++t) fn(user, t);
    return;
  }
  fn_ = fn;
  user_ = user;
  n_tasks_ = n_tasks;
  next_task_.store(0, std::memory_order_relaxed);
  busy_workers_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  {
    // The lock orders the bump against a worker that is about to sleep, so none misses it.
    std::lock_guard<std::mutex> lock(mutex_);
    generation_.fetch_add(1, std::memory_order_acq_rel);
  }
  wake_.notify_all();
  RunTasks();
  double start = NowSeconds();
  // A worker may have been descheduled (the cores are shared): after a short spin, yield the
  // core to it instead of burning the time slice it needs.
  for (int spin = 0; busy_workers_.load(std::memory_order_acquire) != 0; ++spin) {
    if (spin < kCallerSpinRounds) {
      CpuRelax();
    } else {
      sched_yield();
    }
  }
  wait_seconds_ += NowSeconds() - start;
}

}  // namespace staticlm
