// The thread pool: every task runs exactly once per ParallelFor, across many jobs, in sleeping
// and busy-wait modes; a pool of one runs on the caller.
#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "platform/thread_pool.h"

namespace staticlm {
namespace {

struct Counts {
  std::vector<std::atomic<int>> hits;
  explicit Counts(int n) : hits(size_t(n)) {}
};

void Hit(void* user, int task) {
  static_cast<Counts*>(user)->hits[size_t(task)].fetch_add(1);
}

void ExpectEveryTaskOnce(const ThreadPoolOptions& options) {
  ThreadPool pool;
  const char* warning = nullptr;
  ASSERT_TRUE(pool.Start(options, &warning).ok());
  EXPECT_EQ(pool.threads(), options.threads);
  for (int n_tasks : {0, 1, 2, 3, 7, 64, 1000}) {
    for (int job = 0; job < 50; ++job) {
      Counts counts(n_tasks);
      pool.ParallelFor(n_tasks, Hit, &counts);
      for (int t = 0; t < n_tasks; ++t) {
        ASSERT_EQ(counts.hits[size_t(t)].load(), 1) << "task " << t << " of " << n_tasks;
      }
    }
  }
  pool.Stop();
  pool.Stop();  // twice is fine
}

TEST(ThreadPoolTest, OneThreadRunsOnTheCaller) {
  ExpectEveryTaskOnce({1, false, false});
}
TEST(ThreadPoolTest, SleepingWorkers) {
  ExpectEveryTaskOnce({3, false, false});
}
TEST(ThreadPoolTest, BusyWaitingWorkers) {
  ExpectEveryTaskOnce({2, true, false});
}
TEST(ThreadPoolTest, PinnedWorkers) {
  ExpectEveryTaskOnce({2, false, true});
}

TEST(ThreadPoolTest, MoreTasksThanAJobWordHoldsRunOnce) {
  ExpectEveryTaskOnce({2, false, false});
  ThreadPool pool;
  const char* warning = nullptr;
  ASSERT_TRUE(pool.Start({2, false, false}, &warning).ok());
  Counts counts(70000);
  pool.ParallelFor(70000, Hit, &counts);
  for (int t = 0; t < 70000; ++t) ASSERT_EQ(counts.hits[size_t(t)].load(), 1) << t;
}

// Each task records the job it ran in: a worker that wakes late must never run a task of a
// job with the previous job's function or argument, nor run a task twice.
struct JobRecord {
  int job = 0;
  std::vector<std::atomic<int>> seen_job;
  std::vector<std::atomic<int>> hits;
  explicit JobRecord(int n) : seen_job(size_t(n)), hits(size_t(n)) {}
};

void RecordJob(void* user, int task) {
  auto* r = static_cast<JobRecord*>(user);
  r->seen_job[size_t(task)].store(r->job);
  r->hits[size_t(task)].fetch_add(1);
}

TEST(ThreadPoolTest, UnderContentionEveryTaskOnceInItsOwnJob) {
  // More runnable threads than cores, so that workers are descheduled mid-job.
  std::atomic<bool> stop{false};
  std::vector<std::thread> hogs;
  for (int i = 0; i < 3; ++i) {
    hogs.emplace_back([&stop] {
      while (!stop.load()) {
      }
    });
  }
  ThreadPool pool;
  const char* warning = nullptr;
  ASSERT_TRUE(pool.Start({3, false, false}, &warning).ok());
  JobRecord a(9), b(9);
  for (int job = 1; job <= 3000; ++job) {
    JobRecord& r = job % 2 ? a : b;  // alternate two arguments
    r.job = job;
    pool.ParallelFor(9, RecordJob, &r);
    for (int t = 0; t < 9; ++t) {
      ASSERT_EQ(r.seen_job[size_t(t)].load(), job) << "task " << t;
      ASSERT_EQ(r.hits[size_t(t)].exchange(0), 1) << "task " << t << " of job " << job;
    }
  }
  stop = true;
  for (std::thread& h : hogs) h.join();
}

TEST(ThreadPoolTest, RejectsBadThreadCounts) {
  ThreadPool pool;
  const char* warning = nullptr;
  EXPECT_FALSE(pool.Start({0, false, false}, &warning).ok());
  EXPECT_FALSE(pool.Start({1000, false, false}, &warning).ok());
}

}  // namespace
}  // namespace staticlm
