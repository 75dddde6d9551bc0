#include "platform/bandwidth_probe.h"

#include <errno.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <sys/wait.h>
#include <unistd.h>

#include <barrier>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "platform/aligned_buffer.h"
#include "platform/clock.h"

namespace staticlm {
namespace {

// The loops the probe times; the fastest one's rate is the bound. A plain loop is not the
// machine's ceiling: on an Emerald Rapids VM (2 vCPUs, 2 threads, 2026-11-27, ten runs:
// bench/results/2026-11-27-emr-probe-loops.txt) it read 16.4-20.0 GB/s, the same loop over four
// streams at once 20.1-25.7, and four streams of 512-bit loads 25.3-27.3, while the decode
// kernels' own loads read faster than the plain loop. Each loop keeps independent sums, so it is
// bound by loads, not by an add chain.
using SumLoop = uint64_t (*)(const uint64_t* words, size_t n);

// One stream, four sums; the compiler vectorizes it for the baseline ISA.
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

// Four streams at once, one per quarter of the slice (more lines in flight, a prefetcher each).
uint64_t SumFourStreams(const uint64_t* words, size_t n) {
  const size_t q = n / 4;
  uint64_t a = 0, b = 0, c = 0, d = 0;
  for (size_t i = 0; i < q; ++i) {
    a += words[i];
    b += words[q + i];
    c += words[2 * q + i];
    d += words[3 * q + i];
  }
  for (size_t i = 4 * q; i < n; ++i) a += words[i];
  return a + b + c + d;
}

#if defined(__x86_64__)
// Four streams with the widest loads the CPU has (unaligned loads: the buffer is new[]'s), each
// stream a whole number of 64-byte blocks.
__attribute__((target("avx2"))) uint64_t SumFourStreamsAvx2(const uint64_t* words, size_t n) {
  const size_t q = n / 4 / 8 * 8;
  __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
  for (size_t i = 0; i < q; i += 4) {
    a = _mm256_add_epi64(a, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + i)));
    b = _mm256_add_epi64(b, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + q + i)));
    c = _mm256_add_epi64(c,
                         _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + 2 * q + i)));
    d = _mm256_add_epi64(d,
                         _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + 3 * q + i)));
  }
  uint64_t lanes[4];
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(lanes),
                      _mm256_add_epi64(_mm256_add_epi64(a, b), _mm256_add_epi64(c, d)));
  uint64_t sum = lanes[0] + lanes[1] + lanes[2] + lanes[3];
  for (size_t i = 4 * q; i < n; ++i) sum += words[i];
  return sum;
}

__attribute__((target("avx512f"))) uint64_t SumFourStreamsAvx512(const uint64_t* words, size_t n) {
  const size_t q = n / 4 / 8 * 8;
  __m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
  for (size_t i = 0; i < q; i += 8) {
    a = _mm512_add_epi64(a, _mm512_loadu_si512(words + i));
    b = _mm512_add_epi64(b, _mm512_loadu_si512(words + q + i));
    c = _mm512_add_epi64(c, _mm512_loadu_si512(words + 2 * q + i));
    d = _mm512_add_epi64(d, _mm512_loadu_si512(words + 3 * q + i));
  }
  // Through memory rather than _mm512_reduce_add_epi64, which GCC 12 warns about.
  uint64_t lanes[8];
  _mm512_storeu_si512(lanes, _mm512_add_epi64(_mm512_add_epi64(a, b), _mm512_add_epi64(c, d)));
  uint64_t sum = 0;
  for (uint64_t lane : lanes) sum += lane;
  for (size_t i = 4 * q; i < n; ++i) sum += words[i];
  return sum;
}
#endif

struct NamedLoop {
  const char* name;
  SumLoop loop;
};

// The loops this CPU can run, in the order they are timed.
int AvailableLoops(NamedLoop* out) {
  int n = 0;
  out[n++] = {"plain", SumWords};
  out[n++] = {"4 streams", SumFourStreams};
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2")) out[n++] = {"4 streams avx2", SumFourStreamsAvx2};
  if (__builtin_cpu_supports("avx512f")) {
    out[n++] = {"4 streams avx512", SumFourStreamsAvx512};
  }
#endif
  return n;
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
  NamedLoop loops[kMaxReadLoops];
  int n_loops = 0;
  std::vector<double> pass_seconds;  // n_loops × passes, loop by loop
  int passes = 0;
};

void ProbeThread(Shared* shared, int index) {
  Slice slice = shared->slices[static_cast<size_t>(index)];
  // First touch: the pages are created by the thread that will read them.
  for (size_t i = 0; i < slice.n; ++i) slice.words[i] = i * 0x9E3779B97F4A7C15ull;
  uint64_t sum = 0;
  for (int l = 0; l < shared->n_loops; ++l) {
    for (int pass = 0; pass < shared->passes; ++pass) {
      shared->sync.arrive_and_wait();
      double start = NowSeconds();
      sum += shared->loops[l].loop(slice.words, slice.n);
      shared->sync.arrive_and_wait();
      if (index == 0) {
        shared->pass_seconds[static_cast<size_t>(l * shared->passes + pass)] = NowSeconds() - start;
      }
    }
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
  // On huge pages as staticlm's own buffers are (zeroed there; each thread then writes its slice).
  AlignedBuffer storage;
  STATICLM_RETURN_IF_ERROR(
      storage.Allocate(words * sizeof(uint64_t), 64, "the bandwidth probe",
                       options.huge_pages ? Pages::kHugeWherePossible : Pages::kNormal));
  uint64_t* const buffer = reinterpret_cast<uint64_t*>(storage.data());
  result->huge_pages = storage.on_huge_pages();
  Shared shared(options.threads);
  const size_t per_thread = words / static_cast<size_t>(options.threads) / 8 * 8;  // 64 B lines
  for (int t = 0; t < options.threads; ++t) {
    size_t begin = per_thread * static_cast<size_t>(t);
    size_t end = t + 1 == options.threads ? words : begin + per_thread;
    shared.slices.push_back({buffer + begin, end - begin});
  }
  shared.sums.assign(static_cast<size_t>(options.threads), 0);
  shared.n_loops = AvailableLoops(shared.loops);
  shared.passes = options.passes;
  shared.pass_seconds.assign(static_cast<size_t>(shared.n_loops * options.passes), 0.0);
  std::vector<std::thread> workers;
  for (int t = 1; t < options.threads; ++t) workers.emplace_back(ProbeThread, &shared, t);
  ProbeThread(&shared, 0);
  for (std::thread& w : workers) w.join();
  // Keeps the sums observable, so the reads cannot be optimized away.
  volatile uint64_t sink = 0;
  for (uint64_t s : shared.sums) sink = sink + s;
  // Each loop's rate is its best pass's; the fastest loop's is the result.
  const double bytes = static_cast<double>(words * sizeof(uint64_t));
  result->n_loops = shared.n_loops;
  int fastest_loop = 0;
  for (int l = 0; l < shared.n_loops; ++l) {
    double seconds = shared.pass_seconds[static_cast<size_t>(l * options.passes)];
    for (int pass = 1; pass < options.passes; ++pass) {
      const double t = shared.pass_seconds[static_cast<size_t>(l * options.passes + pass)];
      seconds = t < seconds ? t : seconds;
    }
    result->loop_names[l] = shared.loops[l].name;
    result->loop_bytes_per_s[l] = seconds > 0 ? bytes / seconds : 0;
    if (result->loop_bytes_per_s[l] > result->loop_bytes_per_s[fastest_loop]) fastest_loop = l;
  }
  result->bytes_per_s = result->loop_bytes_per_s[fastest_loop];
  result->loop = result->loop_names[fastest_loop];
  result->buffer_bytes = words * sizeof(uint64_t);
  result->threads = options.threads;
  result->passes = options.passes;
  return Status::Ok();
}

int SumWithEveryReadLoop(const uint64_t* words, size_t n, uint64_t sums[kMaxReadLoops],
                         const char* names[kMaxReadLoops]) {
  NamedLoop loops[kMaxReadLoops];
  const int n_loops = AvailableLoops(loops);
  for (int l = 0; l < n_loops; ++l) {
    sums[l] = loops[l].loop(words, n);
    names[l] = loops[l].name;
  }
  return n_loops;
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
