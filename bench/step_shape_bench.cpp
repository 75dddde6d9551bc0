// What the shape of a decode step costs a plain read (issue 16: "what the best achievable is").
// A decode step streams its weights as ~120 products in a dependent chain, each split between
// the threads with a wait after it; a bandwidth probe streams the same bytes as one long read.
// This reads one buffer both ways through staticlm's own thread pool, alternating pass by pass:
//   whole  one ParallelFor over the buffer, one equal slice per thread;
//   step   one ParallelFor per product, in the step's order and sizes, one equal slice per
//          thread (as a decode step cuts a layer's products), the output head in 8 tasks per
//          thread (as it is cut);
// with the same read loop, so the ratio of the two is what the step's shape alone costs any
// kernel that only reads. The defaults are SmolLM2-135M Q4_1's decode products (file sizes:
// per layer q/k/v 345,600 bytes, o 207,360, gate+up 1,105,920, down 552,960; 30 layers; the
// Q8_0 head 30,081,024).
//
//   step_shape_bench [--threads 2] [--passes 200] [--layers 30]
//                    [--layer-bytes 345600,207360,1105920,552960] [--head-bytes 30081024]
//
// Buffer on huge pages where the system allows, as staticlm's packed weights are.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench/plain_read.h"
#include "platform/aligned_buffer.h"
#include "platform/clock.h"
#include "platform/thread_pool.h"
#include "tools/staticlm/bench_stats.h"

namespace {

struct Options {
  int threads = 2;
  int passes = 200;
  int layers = 30;
  std::vector<size_t> layer_bytes = {345600, 207360, 1105920, 552960};
  size_t head_bytes = 30081024;
};

bool ParseSizes(const char* text, std::vector<size_t>* out) {
  out->clear();
  for (const char* p = text; *p != '\0';) {
    char* end = nullptr;
    const long long v = std::strtoll(p, &end, 10);
    if (end == p || v <= 0) return false;
    out->push_back(static_cast<size_t>(v));
    p = *end == ',' ? end + 1 : end;
    if (*end != ',' && *end != '\0') return false;
  }
  return !out->empty();
}

bool ParseOptions(int argc, char** argv, Options* o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const char* name = argv[i];
    const char* value = argv[i + 1];
    const long v = std::strtol(value, nullptr, 10);
    if (std::strcmp(name, "--layer-bytes") == 0) {
      if (!ParseSizes(value, &o->layer_bytes)) return false;
      continue;
    }
    if (v <= 0) return false;
    if (std::strcmp(name, "--threads") == 0) {
      o->threads = static_cast<int>(v);
    } else if (std::strcmp(name, "--passes") == 0) {
      o->passes = static_cast<int>(v);
    } else if (std::strcmp(name, "--layers") == 0) {
      o->layers = static_cast<int>(v);
    } else if (std::strcmp(name, "--head-bytes") == 0) {
      o->head_bytes = static_cast<size_t>(v);
    } else {
      return false;
    }
  }
  return argc % 2 == 1;
}

// One product's read: `tasks` equal slices of [begin, begin + words).
struct ReadJob {
  const uint64_t* begin;
  size_t words;
  int tasks;
  struct alignas(64) Sum {
    uint64_t value;
  } sums[64];  // per task, a line each: the threads write no shared line
};

void ReadTask(void* user, int task) {
  ReadJob& j = *static_cast<ReadJob*>(user);
  const size_t slice = (j.words / static_cast<size_t>(j.tasks) + 7) / 8 * 8;
  const size_t first = slice * static_cast<size_t>(task);
  if (first >= j.words) return;
  const size_t n = first + slice > j.words ? j.words - first : slice;
  j.sums[task].value ^= staticlm::bench::ReadWords(j.begin + first, n);
}

uint64_t Read(staticlm::ThreadPool& pool, const uint64_t* begin, size_t words, int tasks) {
  ReadJob job{begin, words, tasks, {}};
  pool.ParallelFor(tasks, ReadTask, &job);
  uint64_t s = 0;
  for (int t = 0; t < tasks; ++t) s ^= job.sums[t].value;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseOptions(argc, argv, &o) || o.threads > 8) {
    std::fprintf(stderr,
                 "usage: step_shape_bench [--threads N<=8] [--passes N] [--layers N] "
                 "[--layer-bytes A,B,...] [--head-bytes N]\n");
    return 2;
  }
  std::vector<size_t> products;  // in words, the step's order
  for (int l = 0; l < o.layers; ++l) {
    for (size_t b : o.layer_bytes) products.push_back(b / 8);
  }
  products.push_back(o.head_bytes / 8);
  size_t words = 0;
  for (size_t p : products) words += p;

  staticlm::AlignedBuffer buffer;
  if (!buffer.Allocate(words * 8, 64, "step buffer", staticlm::Pages::kHugeWherePossible).ok()) {
    std::fprintf(stderr, "step_shape_bench: cannot allocate %zu bytes\n", words * 8);
    return 1;
  }
  auto* w = reinterpret_cast<uint64_t*>(buffer.data());
  for (size_t i = 0; i < words; ++i) w[i] = i * 0x9E3779B97F4A7C15ull;  // touch every page

  staticlm::ThreadPool pool;
  const char* pin_warning = nullptr;
  if (!pool.Start({o.threads, false, false}, &pin_warning).ok()) return 1;

  std::vector<double> whole_ms, step_ms;
  uint64_t sink = 0;
  for (int pass = 0; pass < o.passes + 1; ++pass) {  // pass 0 warms up, untimed
    double start = staticlm::NowSeconds();
    sink ^= Read(pool, w, words, o.threads);
    const double whole = staticlm::NowSeconds() - start;
    start = staticlm::NowSeconds();
    const uint64_t* at = w;
    for (size_t i = 0; i < products.size(); ++i) {
      const bool head = i + 1 == products.size();
      sink ^= Read(pool, at, products[i], head ? 8 * o.threads : o.threads);
      at += products[i];
    }
    const double step = staticlm::NowSeconds() - start;
    if (pass == 0) continue;
    whole_ms.push_back(whole * 1e3);
    step_ms.push_back(step * 1e3);
  }
  const staticlm::cli::Summary a = staticlm::cli::Summarize(whole_ms.data(), whole_ms.size());
  const staticlm::cli::Summary b = staticlm::cli::Summarize(step_ms.data(), step_ms.size());
  const double mb = static_cast<double>(words * 8) / 1e6;
  std::printf("%.2f MiB, %zu products, %d threads, %d passes alternating (checksum %llx)\n",
              static_cast<double>(words * 8) / (1 << 20), products.size(), o.threads, o.passes,
              static_cast<unsigned long long>(sink));
  std::printf("  whole  min %.3f  p50 %.3f ms  p50 rate %.2f GB/s\n", a.min, a.p50, mb / a.p50);
  std::printf("  step   min %.3f  p50 %.3f ms  p50 rate %.2f GB/s\n", b.min, b.p50, mb / b.p50);
  std::printf("  step / whole: p50 %.3f, min %.3f\n", b.p50 / a.p50, b.min / a.min);
  return 0;
}
