// CpuContention (platform/cpu_contention.h): the counters `staticlm bench` reads around its
// decode steps to tell the machine's stalls from staticlm's. The reads must be known on Linux,
// must read the wait time and not the run time of each thread (two threads made to share one CPU
// wait for about as long as they run), and must not touch the heap (the bench calls them in its
// run phase).
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "platform/alloc_counter.h"
#include "platform/cpu_contention.h"

namespace staticlm {
namespace {

TEST(CpuContentionTest, EveryCounterIsKnownOnLinux) {
  const CpuContention c = ReadCpuContention();
  EXPECT_GE(c.steal_s, 0.0);
  EXPECT_GE(c.run_delay_s, 0.0);
  EXPECT_GE(c.involuntary_switches, 0);
}

TEST(CpuContentionTest, BetweenSubtractsAndKeepsUnknownsUnknown) {
  CpuContention before;
  before.steal_s = 1.0;
  before.run_delay_s = 2.0;
  before.involuntary_switches = 5;
  CpuContention after = before;
  after.steal_s = 1.25;
  after.run_delay_s = 2.5;
  after.involuntary_switches = 9;
  CpuContention d = CpuContentionBetween(before, after);
  EXPECT_DOUBLE_EQ(d.steal_s, 0.25);
  EXPECT_DOUBLE_EQ(d.run_delay_s, 0.5);
  EXPECT_EQ(d.involuntary_switches, 4);

  after.steal_s = -1;
  before.involuntary_switches = -1;
  d = CpuContentionBetween(before, after);
  EXPECT_EQ(d.steal_s, -1.0);
  EXPECT_DOUBLE_EQ(d.run_delay_s, 0.5);
  EXPECT_EQ(d.involuntary_switches, -1);
}

// Two spinning threads confined to one CPU for `kShare`: each runs about half the time and waits
// for the CPU the other half, so this process's run delay grows by about kShare in all.
TEST(CpuContentionTest, ThreadsSharingOneCpuShowAsWaitTime) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  int cpu = -1;
  for (int i = 0; i < CPU_SETSIZE && cpu < 0; ++i) {
    if (CPU_ISSET(i, &saved)) cpu = i;
  }
  ASSERT_GE(cpu, 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);

  std::atomic<bool> stop{false};
  std::atomic<int> started{0};
  std::vector<std::thread> spinners;
  for (int i = 0; i < 2; ++i) {
    spinners.emplace_back([&] {
      pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
      started.fetch_add(1);
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
  }
  while (started.load() < 2) std::this_thread::yield();
  const CpuContention before = ReadCpuContention();
  constexpr auto kShare = std::chrono::milliseconds(400);
  std::this_thread::sleep_for(kShare);
  // Read while the spinners still live: a thread's delay leaves the sum when it ends.
  const CpuContention after = ReadCpuContention();
  stop.store(true);
  for (std::thread& t : spinners) t.join();

  const CpuContention d = CpuContentionBetween(before, after);
  // About 400 ms; at least a quarter of it even on a machine whose other CPU is busy (the two
  // spinners can only ever wait more, never less, than the time one of them is not running).
  EXPECT_GE(d.run_delay_s, 0.1) << "run delay " << d.run_delay_s << " s";
  EXPECT_LT(d.run_delay_s, 5.0) << "run delay " << d.run_delay_s << " s";
  EXPECT_GT(d.involuntary_switches, 0);
}

TEST(CpuContentionTest, ReadingAllocatesNothing) {
  if (!alloc_counter::Available()) GTEST_SKIP() << "no allocation counter in this build";
  ReadCpuContention();  // any one-time setup of the C library happens here
  alloc_counter::Start();
  const CpuContention c = ReadCpuContention();
  alloc_counter::Stop();
  EXPECT_GE(c.run_delay_s, 0.0);
  EXPECT_EQ(alloc_counter::Events(), 0u);
}

}  // namespace
}  // namespace staticlm
