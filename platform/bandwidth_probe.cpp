#include "platform/bandwidth_probe.h"

#include <errno.h>
#include <sys/wait.h>
#include <unistd.h>

#include <barrier>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <thread>
#include <vector>

#include "platform/clock.h"

namespace staticlm {
namespace {

// Four independent sums so the loop is bound by loads, not by one add chain; the compiler
// vectorizes it.
uint64_t SumWords(const uint64_t* words, size_t n) {
  uint64_t a = 0, b = 0, c = 0, d = 0;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    a += words[i];
    b += words[i + 1];
    c += words[i + 2];
    d += words[i + 3];
  }
  for (; i < n; ++i) a += words[i];
  return a + b + c + d;
}

struct Slice {
  uint64_t* words;
  size_t n;
};

// What every probe thread shares. Thread 0 takes the times around each pass; the barriers make
// "around" mean from the moment all threads are released until the last one is done.
struct Shared {
  explicit Shared(int threads) : sync(threads) {}
  std::barrier<> sync;
  std::vector<Slice> slices;
  std::vector<uint64_t> sums;
  std::vector<double> pass_seconds;
};

void ProbeThread(Shared* shared, int index) {
  Slice slice = shared->slices[static_cast<size_t>(index)];
  // First touch: the pages are created by the thread that will read them.
  for (size_t i = 0; i < slice.n; ++i) slice.words[i] = i * 0x9E3779B97F4A7C15ull;
  uint64_t sum = 0;
  for (size_t pass = 0; pass < shared->pass_seconds.size(); ++pass) {
    shared->sync.arrive_and_wait();
    double start = NowSeconds();
    sum += SumWords(slice.words, slice.n);
    shared->sync.arrive_and_wait();
    if (index == 0) shared->pass_seconds[pass] = NowSeconds() - start;
  }
  shared->sums[static_cast<size_t>(index)] = sum;
}

bool WriteAll(int fd, const void* data, size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = write(fd, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

bool ReadAll(int fd, void* data, size_t bytes) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    ssize_t n = read(fd, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

// What the child sends back through the pipe.
struct ChildReport {
  int ok;
  BandwidthProbeResult result;
  char message[240];  // as Status holds
};

}  // namespace

Status MeasureReadBandwidth(const BandwidthProbeOptions& options, BandwidthProbeResult* result) {
  if (options.threads < 1 || options.threads > 256 || options.passes < 1 ||
      options.buffer_bytes < 4096 * static_cast<uint64_t>(options.threads)) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "bandwidth probe: bad options (%llu bytes, %d threads, %d passes)",
                         static_cast<unsigned long long>(options.buffer_bytes), options.threads,
                         options.passes);
  }
  const size_t words = options.buffer_bytes / sizeof(uint64_t);
  std::unique_ptr<uint64_t[]> buffer(new (std::nothrow) uint64_t[words]);
  if (!buffer) {
    return Status::Error(StatusCode::kOutOfMemory, "bandwidth probe: cannot allocate %llu bytes",
                         static_cast<unsigned long long>(options.buffer_bytes));
  }
  Shared shared(options.threads);
  const size_t per_thread = words / static_cast<size_t>(options.threads) / 8 * 8;  // 64 B lines
  for (int t = 0; t < options.threads; ++t) {
    size_t begin = per_thread * static_cast<size_t>(t);
    size_t end = t + 1 == options.threads ? words : begin + per_thread;
    shared.slices.push_back({buffer.get() + begin, end - begin});
  }
  shared.sums.assign(static_cast<size_t>(options.threads), 0);
  shared.pass_seconds.assign(static_cast<size_t>(options.passes), 0.0);

  std::vector<std::thread> workers;
  for (int t = 1; t < options.threads; ++t) workers.emplace_back(ProbeThread, &shared, t);
  ProbeThread(&shared, 0);
  for (std::thread& w : workers) w.join();

  // Keeps the sums observable, so the reads cannot be optimized away.
  volatile uint64_t sink = 0;
  for (uint64_t s : shared.sums) sink = sink + s;
  double best = shared.pass_seconds[0];
  for (double s : shared.pass_seconds) best = s < best ? s : best;
  result->bytes_per_s = best > 0 ? static_cast<double>(words * sizeof(uint64_t)) / best : 0;
  result->buffer_bytes = words * sizeof(uint64_t);
  result->threads = options.threads;
  result->passes = options.passes;
  return Status::Ok();
}

Status MeasureReadBandwidthInChild(const BandwidthProbeOptions& options,
                                   BandwidthProbeResult* result) {
  int fds[2];
  if (pipe(fds) != 0) {
    return Status::Error(StatusCode::kInternal, "bandwidth probe: pipe: %s", std::strerror(errno));
  }
  std::fflush(nullptr);  // the child must not write out the parent's buffered output again
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return Status::Error(StatusCode::kInternal, "bandwidth probe: fork: %s", std::strerror(errno));
  }
  if (pid == 0) {
    close(fds[0]);
    ChildReport report{};
    Status s = MeasureReadBandwidth(options, &report.result);
    report.ok = s.ok() ? 1 : 0;
    std::snprintf(report.message, sizeof(report.message), "%s", s.message());
    bool written = WriteAll(fds[1], &report, sizeof(report));
    _exit(written ? 0 : 1);  // no atexit handlers, no flushing of inherited stdio buffers
  }
  close(fds[1]);
  ChildReport report{};
  bool received = ReadAll(fds[0], &report, sizeof(report));
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!received || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Status::Error(StatusCode::kInternal, "bandwidth probe: the child process failed");
  }
  if (!report.ok) return Status::Error(StatusCode::kInternal, "%s", report.message);
  *result = report.result;
  return Status::Ok();
}

uint64_t LastLevelCacheBytes() {
  uint64_t largest = 0;
  for (int index = 0; index < 16; ++index) {
    char path[96];
    std::snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/size", index);
    FILE* f = std::fopen(path, "r");
    if (f == nullptr) break;
    unsigned long long value = 0;
    char unit = 0;
    int fields = std::fscanf(f, "%llu%c", &value, &unit);
    std::fclose(f);
    if (fields < 1) continue;
    uint64_t bytes = value;
    if (fields == 2 && (unit == 'K' || unit == 'k')) bytes = value << 10;
    if (fields == 2 && unit == 'M') bytes = value << 20;
    largest = bytes > largest ? bytes : largest;
  }
  return largest;
}

}  // namespace staticlm
