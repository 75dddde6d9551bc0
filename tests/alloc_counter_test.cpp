#include "platform/alloc_counter.h"

#include "platform/driver_scope.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

namespace staticlm::alloc_counter {
namespace {

// Makes `p` observable so the optimizer cannot drop a new/delete or malloc/free pair.
void Escape(void* p) {
  asm volatile("" : : "g"(p) : "memory");
}

std::string FirstEvent() {
  char text[4096];
  DescribeFirstEvent(text, sizeof(text));
  return text;
}

class AllocCounterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Available()) {
      GTEST_SKIP() << "sanitizer build: ASan/UBSan replace malloc themselves, so alloc_counter "
                      "defines no interposers and counts nothing";
    }
  }
  void TearDown() override { Stop(); }
};

TEST_F(AllocCounterTest, CountsMallocAndFree) {
  Start();
  void* p = std::malloc(100);
  Escape(p);
  std::free(p);
  Stop();
  EXPECT_EQ(Allocations(), 1u);
  EXPECT_EQ(Frees(), 1u);
  EXPECT_EQ(ThreadsCreated(), 0u);
  EXPECT_EQ(Events(), 2u);
}

TEST_F(AllocCounterTest, CountsEveryCAllocationFunction) {
  Start();
  void* a = std::calloc(4, 8);
  Escape(a);
  a = std::realloc(a, 64);
  Escape(a);
  void* b = std::aligned_alloc(64, 128);
  Escape(b);
  void* c = nullptr;
  int rc = posix_memalign(&c, 64, 32);
  Escape(c);
  std::free(a);
  std::free(b);
  std::free(c);
  Stop();
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(Allocations(), 4u);
  EXPECT_EQ(Frees(), 3u);
}

TEST_F(AllocCounterTest, FreeOfNullIsNotCounted) {
  void* volatile null = nullptr;
  Start();
  std::free(null);
  operator delete(null);
  Stop();
  EXPECT_EQ(Events(), 0u);
}

TEST_F(AllocCounterTest, CountsNewAndDeleteInEveryForm) {
  struct alignas(256) Wide {
    char bytes[256];
  };
  Start();
  int* one = new int(7);
  Escape(one);
  delete one;
  int* many = new int[10];
  Escape(many);
  delete[] many;
  Wide* wide = new Wide;
  Escape(wide);
  delete wide;
  int* quiet = new (std::nothrow) int(1);
  Escape(quiet);
  delete quiet;
  Stop();
  EXPECT_EQ(Allocations(), 4u);
  EXPECT_EQ(Frees(), 4u);
}

TEST_F(AllocCounterTest, CountsVectorGrowth) {
  Start();
  {
    std::vector<int> v;
    for (int i = 0; i < 100; ++i) v.push_back(i);
    Escape(v.data());
  }
  Stop();
  // Capacity grows geometrically: several reallocations, each old block freed.
  EXPECT_GE(Allocations(), 3u);
  EXPECT_EQ(Frees(), Allocations());
}

TEST_F(AllocCounterTest, CountsThreadCreation) {
  Start();
  std::thread t([] {});
  t.join();
  Stop();
  EXPECT_EQ(ThreadsCreated(), 1u);
  EXPECT_GE(Allocations(), 1u);  // std::thread heap-allocates its callable's state
}

TEST_F(AllocCounterTest, PureArithmeticCountsNothing) {
  Start();
  volatile uint64_t sum = 0;
  for (uint64_t i = 0; i < 100000; ++i) sum = sum + i * i;
  Stop();
  EXPECT_EQ(Events(), 0u);
  EXPECT_EQ(FirstEvent(), "no event");
}

TEST_F(AllocCounterTest, NothingIsCountedOutsideStartStop) {
  void* before = std::malloc(8);
  Escape(before);
  Start();
  Stop();
  void* after = std::malloc(8);
  Escape(after);
  std::free(before);
  std::free(after);
  EXPECT_EQ(Events(), 0u);
}

TEST_F(AllocCounterTest, StartResetsTheCounts) {
  Start();
  void* p = std::malloc(8);
  Escape(p);
  std::free(p);
  Stop();
  ASSERT_EQ(Events(), 2u);
  Start();
  Stop();
  EXPECT_EQ(Events(), 0u);
  EXPECT_EQ(FirstEvent(), "no event");
}

// Four threads allocate concurrently; a lost update would show as a short count. The threads
// exist before Start() and exit after Stop(), so only their loops are counted.
TEST_F(AllocCounterTest, CountsAcrossThreadsWithoutLosingEvents) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 5000;
  std::atomic<bool> go{false};
  std::atomic<bool> may_exit{false};
  std::atomic<int> done{0};
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      while (!go.load()) std::this_thread::yield();
      for (int i = 0; i < kPerThread; ++i) {
        void* p = std::malloc(16);
        Escape(p);
        std::free(p);
      }
      done.fetch_add(1);
      while (!may_exit.load()) std::this_thread::yield();
    });
  }
  Start();
  go.store(true);
  while (done.load() < kThreads) std::this_thread::yield();
  Stop();
  may_exit.store(true);
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(Allocations(), uint64_t{kThreads} * kPerThread);
  EXPECT_EQ(Frees(), uint64_t{kThreads} * kPerThread);
  EXPECT_EQ(ThreadsCreated(), 0u);
}

// strdup lives in libc.so, whose dynamic symbols dladdr can always name, so the backtrace
// must show it even though this executable is not linked with -rdynamic.
TEST_F(AllocCounterTest, DescribesTheFirstEventWithABacktrace) {
  Start();
  char* copy = strdup("hello");
  Escape(copy);
  void* later = std::malloc(1000);
  Escape(later);
  std::free(later);
  std::free(copy);
  Stop();
  ASSERT_EQ(Allocations(), 2u);
  std::string text = FirstEvent();
  EXPECT_EQ(text.rfind("malloc of 6 bytes\n", 0), 0u) << text;
  EXPECT_NE(text.find("strdup"), std::string::npos) << text;
  // The listing starts at the interposed function, not inside the counter.
  EXPECT_NE(text.find("\n  #0 malloc+"), std::string::npos) << text;
  // The call chain reaches back into this executable (named, or as path+offset).
  char exe[4096] = {0};
  ASSERT_GT(readlink("/proc/self/exe", exe, sizeof(exe) - 1), 0);
  const char* exe_name = std::strrchr(exe, '/') + 1;
  EXPECT_NE(text.find(exe_name), std::string::npos) << text;
}

TEST_F(AllocCounterTest, DescriptionIsTruncatedToCapacity) {
  Start();
  void* p = std::malloc(24);
  Escape(p);
  std::free(p);
  Stop();
  char small[8];
  std::memset(small, 'x', sizeof(small));
  DescribeFirstEvent(small, sizeof(small));
  EXPECT_EQ(std::string(small), "malloc ");
}

// The Vulkan backend calls every driver command inside a driver_scope::Scope; what happens
// there is the driver's, counted apart, and never the first event staticlm is blamed for.
TEST_F(AllocCounterTest, EventsInsideADriverScopeAreCountedAsTheDrivers) {
  Start();
  {
    driver_scope::Scope driver;
    void* p = std::malloc(77);
    Escape(p);
    std::free(p);
  }
  void* q = std::malloc(33);
  Escape(q);
  std::free(q);
  Stop();
  EXPECT_EQ(Allocations(), 1u);
  EXPECT_EQ(Frees(), 1u);
  EXPECT_EQ(DriverAllocations(), 1u);
  EXPECT_EQ(DriverFrees(), 1u);
  EXPECT_EQ(DriverEvents(), 2u);
  EXPECT_EQ(FirstEvent().rfind("malloc of 33 bytes", 0), 0u) << FirstEvent();
}

// A thread a driver starts (lavapipe's workers) stays the driver's after the call that
// started it returns; its allocations never count as staticlm's.
TEST_F(AllocCounterTest, ThreadsStartedInsideADriverAreTheDriversForLife) {
  std::atomic<bool> go{false};
  Start();
  std::thread worker;
  {
    driver_scope::Scope driver;
    worker = std::thread([&go] {
      while (!go.load()) {
      }
      void* p = std::malloc(500);
      Escape(p);
      std::free(p);
    });
  }
  go.store(true);  // the worker allocates after the scope that started it has ended
  worker.join();
  Stop();
  EXPECT_EQ(Events(), 0u) << FirstEvent();
  EXPECT_EQ(DriverThreadsCreated(), 1u);
  EXPECT_GE(DriverAllocations(), 2u);  // std::thread's state and the worker's malloc
  EXPECT_GE(DriverFrees(), 2u);
}

TEST_F(AllocCounterTest, LiveBlocksCountWhatIsStillAllocated) {
  Start();
  void* a = std::malloc(10);
  Escape(a);
  void* b = std::calloc(2, 8);
  Escape(b);
  a = std::realloc(a, 4000);  // moves or grows, still one block
  Escape(a);
  auto* c = new int[3];
  Escape(c);
  EXPECT_EQ(LiveBlocks(), 3);
  std::free(b);
  delete[] c;
  EXPECT_EQ(LiveBlocks(), 1);
  std::free(a);
  Stop();
  EXPECT_EQ(LiveBlocks(), 0);
}

TEST_F(AllocCounterTest, TheNthAllocationFailsLikeARealOne) {
  Start();
  FailAllocation(2);
  void* first = std::malloc(16);
  Escape(first);
  errno = 0;
  void* second = std::malloc(16);
  const int error = errno;
  void* third = std::malloc(16);
  Escape(third);
  FailAllocation(0);
  Stop();
  EXPECT_NE(first, nullptr);
  EXPECT_EQ(second, nullptr);
  EXPECT_EQ(error, ENOMEM);
  EXPECT_NE(third, nullptr);
  std::free(first);
  std::free(third);

  Start();
  FailAllocation(1);
  EXPECT_THROW(Escape(new int(1)), std::bad_alloc);
  FailAllocation(1);
  Start();  // restarts the numbering; the refusal stays armed
  EXPECT_EQ(new (std::nothrow) int(2), nullptr);
  FailAllocation(0);
  Stop();
  EXPECT_EQ(LiveBlocks(), 0);
}

}  // namespace
}  // namespace staticlm::alloc_counter
