#include "platform/thread_pool.h"

#include <pthread.h>
#include <sched.h>

#include "platform/clock.h"

namespace staticlm {
namespace {

// Spinning this many rounds before sleeping keeps back-to-back ops (microseconds apart) off
// the futex path while an idle pool still sleeps. Tens of microseconds, not more: on a shared,
// oversubscribed machine (2 vCPUs, load ~15) a longer spin spends the threads' CPU share on
// waiting. Gemma 3 270M, 2 threads, int8 activations, 2026-11-25: 20000 / 4000 rounds gave
// 120 tok/s prefill and 10-12.6 tok/s decode, 2000 / 1000 gave 139-166 and 14.5-16.5.
constexpr int kSpinRounds = 2000;
constexpr int kCallerSpinRounds = 1000;

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

// Tasks per ParallelFor that fit the job word's 16-bit fields; more run on the caller alone.
constexpr int kMaxTasksPerJob = 0xffff;

uint64_t PackJob(uint32_t id, int n_tasks) {
  return (static_cast<uint64_t>(id) << 32) | (static_cast<uint64_t>(n_tasks) << 16);
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

void ThreadPool::RunTasks(uint32_t job_id) {
  uint64_t job = job_.load(std::memory_order_acquire);
  while (static_cast<uint32_t>(job >> 32) == job_id) {
    const int n_tasks = static_cast<int>((job >> 16) & 0xffff);
    const int task = static_cast<int>(job & 0xffff);
    if (task >= n_tasks) return;
    if (!job_.compare_exchange_weak(job, job + 1, std::memory_order_acq_rel,
                                    std::memory_order_acquire)) {
      continue;  // another thread claimed it (job holds the new value)
    }
    fn_(user_, task);
    done_tasks_.fetch_add(1, std::memory_order_release);
    job = job_.load(std::memory_order_acquire);
  }
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
    RunTasks(static_cast<uint32_t>(seen));
  }
}

void ThreadPool::ParallelFor(int n_tasks, TaskFn fn, void* user) {
  if (workers_.empty() || n_tasks <= 1 || n_tasks > kMaxTasksPerJob) {
    for (int t = 0; t < n_tasks; ++t) fn(user, t);
    return;
  }
  const uint64_t id = generation_.load(std::memory_order_relaxed) + 1;
  fn_ = fn;
  user_ = user;
  done_tasks_.store(0, std::memory_order_relaxed);
  job_.store(PackJob(static_cast<uint32_t>(id), n_tasks), std::memory_order_release);
  {
    // The lock orders the bump against a worker that is about to sleep, so none misses it.
    std::lock_guard<std::mutex> lock(mutex_);
    generation_.store(id, std::memory_order_release);
  }
  wake_.notify_all();
  RunTasks(static_cast<uint32_t>(id));
  double start = NowSeconds();
  // Only tasks claimed by workers can be outstanding here. A worker that claimed one may have
  // been descheduled (the cores are shared): after a short spin, yield the core to it instead
  // of burning the time slice it needs.
  for (int spin = 0; done_tasks_.load(std::memory_order_acquire) != n_tasks; ++spin) {
    if (spin < kCallerSpinRounds) {
      CpuRelax();
    } else {
      sched_yield();
    }
  }
  wait_seconds_ += NowSeconds() - start;
}

}  // namespace staticlm
