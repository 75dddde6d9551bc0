// The thread pool: every task runs exactly once per ParallelFor, across many jobs, in sleeping
// and busy-wait modes; a pool of one runs on the caller.
#include <atomic>
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

TEST(ThreadPoolTest, RejectsBadThreadCounts) {
  ThreadPool pool;
  const char* warning = nullptr;
  EXPECT_FALSE(pool.Start({0, false, false}, &warning).ok());
  EXPECT_FALSE(pool.Start({1000, false, false}, &warning).ok());
}

}  // namespace
}  // namespace staticlm
