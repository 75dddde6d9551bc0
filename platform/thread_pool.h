// ThreadPool: a fixed set of worker threads created at init. In the run phase ParallelFor hands
// them tasks without allocating or creating threads; the calling thread works too.
//
// Which task runs on which thread varies from call to call, so callers split work such that
// every output is computed wholly by one task in a fixed order: results are then identical for
// any thread count.
//
// Tasks are claimed one at a time from a shared counter, and ParallelFor waits only for tasks,
// not for workers: when the cores are shared and a worker is descheduled, the caller runs the
// remaining tasks itself instead of waiting for the worker to be scheduled again. Only a task
// already claimed by a preempted worker is waited for.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "platform/status.h"

namespace staticlm {

struct ThreadPoolOptions {
  int threads = 1;         // total, including the caller; 1 creates no worker
  bool busy_wait = false;  // workers spin between jobs (lowest latency, burns the cores)
  bool pin = false;        // pin thread i to CPU i (the caller to CPU 0)
};

class ThreadPool {
 public:
  using TaskFn = void (*)(void* user, int task);

  ThreadPool() = default;
  ~ThreadPool() { Stop(); }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Init only: creates threads − 1 workers. Pinning that the OS refuses is reported in
  // *pin_warning (a static string) and is not an error.
  Status Start(const ThreadPoolOptions& options, const char** pin_warning);
  // Joins the workers. Safe to call twice.
  void Stop();

  // Run phase: runs fn(user, t) for every t in [0, n_tasks) and returns when all are done.
  // Never allocates. Not reentrant: one ParallelFor at a time.
  void ParallelFor(int n_tasks, TaskFn fn, void* user);

  int threads() const { return static_cast<int>(workers_.size()) + 1; }
  // Seconds the caller spent waiting for workers to finish (synchronisation cost), summed.
  double wait_seconds() const { return wait_seconds_; }
  void ResetWaitSeconds() { wait_seconds_ = 0; }

 private:
  void WorkerLoop(int index);
  // Claims and runs tasks of job `job_id` until none is left (or another job has started).
  void RunTasks(uint32_t job_id);

  ThreadPoolOptions options_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};  // the current job's id; workers watch it
  std::atomic<bool> stopping_{false};
  // The current job as one word, so that a claim is one compare-and-swap that cannot mix two
  // jobs: id (32 bits) | task count (16) | next unclaimed task (16).
  std::atomic<uint64_t> job_{0};
  std::atomic<int> done_tasks_{0};
  // Read by a worker only after it has claimed a task of the job, and written by the caller
  // only after every task of the previous job is done, so they are always the claimed job's.
  TaskFn fn_ = nullptr;
  void* user_ = nullptr;
  double wait_seconds_ = 0;
};

}  // namespace staticlm
