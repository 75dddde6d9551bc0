// How steady this machine streams memory from one pass to the next: the same read of a buffer
// the size of a model's decode step, timed many times, with the latency percentiles that
// `staticlm bench` reports for decode steps. A decode step of a small model is such a read plus
// arithmetic, so when a plain stream's p99 / p50 is as wide as decode's, the tail comes from the
// machine's memory system (other tenants of the host's memory bus are invisible to the guest as
// steal time), not from staticlm.
//
//   stream_jitter_bench [--mib 94] [--threads 2] [--passes 512]
//
// Each pass: every thread reads its contiguous slice once, starting together behind a spin
// barrier; the pass ends when the last is done. Buffer on huge pages where the system allows,
// as staticlm's own buffers are.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "bench/plain_read.h"
#include "platform/aligned_buffer.h"
#include "platform/clock.h"
#include "tools/staticlm/bench_stats.h"

namespace {

struct Options {
  size_t mib = 94;  // SmolLM2-135M Q4_1's decode step at depth 0 reads 93.5 MiB
  int threads = 2;
  int passes = 512;
};

bool ParseOptions(int argc, char** argv, Options* o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const long v = std::strtol(argv[i + 1], nullptr, 10);
    if (v <= 0) return false;
    if (std::strcmp(argv[i], "--mib") == 0) {
      o->mib = static_cast<size_t>(v);
    } else if (std::strcmp(argv[i], "--threads") == 0) {
      o->threads = static_cast<int>(v);
    } else if (std::strcmp(argv[i], "--passes") == 0) {
      o->passes = static_cast<int>(v);
    } else {
      return false;
    }
  }
  return argc % 2 == 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseOptions(argc, argv, &o)) {
    std::fprintf(stderr, "usage: stream_jitter_bench [--mib N] [--threads N] [--passes N]\n");
    return 2;
  }
  const size_t bytes = o.mib << 20;
  staticlm::AlignedBuffer buffer;
  if (!buffer.Allocate(bytes, 64, "stream buffer", staticlm::Pages::kHugeWherePossible).ok()) {
    std::fprintf(stderr, "stream_jitter_bench: cannot allocate %zu MiB\n", o.mib);
    return 1;
  }
  auto* words = reinterpret_cast<uint64_t*>(buffer.data());
  const size_t n = bytes / sizeof(uint64_t);
  for (size_t i = 0; i < n; ++i) words[i] = i * 0x9E3779B97F4A7C15ull;  // touch every page

  const size_t slice = n / static_cast<size_t>(o.threads) / 8 * 8;
  std::atomic<int> pass_started{-1};
  std::atomic<int> done{0};
  std::atomic<uint64_t> sink{0};
  std::vector<std::thread> helpers;
  for (int t = 1; t < o.threads; ++t) {
    helpers.emplace_back([&, t] {
      for (int pass = 0; pass < o.passes + 1; ++pass) {
        while (pass_started.load(std::memory_order_acquire) < pass) {
        }
        sink.fetch_xor(staticlm::bench::ReadWords(words + static_cast<size_t>(t) * slice, slice));
        done.fetch_add(1, std::memory_order_acq_rel);
      }
    });
  }
  std::vector<double> ms;
  for (int pass = 0; pass < o.passes + 1; ++pass) {  // pass 0 warms up, untimed
    const double start = staticlm::NowSeconds();
    pass_started.store(pass, std::memory_order_release);
    sink.fetch_xor(staticlm::bench::ReadWords(words, slice));
    done.fetch_add(1, std::memory_order_acq_rel);
    while (done.load(std::memory_order_acquire) < (pass + 1) * o.threads) {
    }
    if (pass > 0) ms.push_back((staticlm::NowSeconds() - start) * 1e3);
  }
  for (std::thread& t : helpers) t.join();

  // The percentiles `staticlm bench` reports for decode steps, computed the same way.
  const staticlm::cli::Summary t = staticlm::cli::Summarize(ms.data(), ms.size());
  std::printf(
      "stream %zu MiB, %d threads, %d passes: min %.3f  p50 %.3f  p90 %.3f  p99 %.3f  max %.3f ms;"
      "  p99/p50 %.2f;  p50 rate %.1f GB/s  (checksum %llx)\n",
      o.mib, o.threads, o.passes, t.min, t.p50, t.p90, t.p99, t.max, t.p99 / t.p50,
      static_cast<double>(slice * sizeof(uint64_t) * static_cast<size_t>(o.threads)) /
          (t.p50 * 1e6),
      static_cast<unsigned long long>(sink.load()));
  return 0;
}
