// Decode attention at a given cache depth on SmolLM2-135M's shape (9 query heads, 3 KV heads,
// head_dim 64, 30 layers, f16 cache), the fast kernel against the reference, cold: each call
// reads another layer's cache, cycling through all 30 as a decode step does (more than the
// machine's usable cache), so the figure includes streaming the cache from memory.
//
//   attention_bench [--depth 2048] [--reps 7] [--threads 1|2] [--kv f16|f32|q8|q4]
//                   [--reference yes|no] [--layers 30] [--isa best|avx2]
//
// q4 caches (KIVI, groups of 32 tokens) hold the query's own position in the f32 rings and the
// rest quantized, as a decode step at that depth does.
//
// Reports per layer: µs, the cache bytes read and the bandwidth that implies. With --threads 2
// the heads are split as the CPU backend splits them (one task per head, or per KV-head group
// where the kernel serves groups, claimed in turn); the backend's split of deep decode rows over
// their keys (attention_split.h) is not modelled here.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/fast_attention.h"
#include "backends/cpu/half.h"
#include "platform/cpu_features.h"

namespace staticlm::cpu {
namespace {

int kLayers = 30;  // --layers 1: hot (one layer's cache, reused)
constexpr int kHeads = 9, kKvHeads = 3, kHeadDim = 64;
constexpr int kQ4Group = 32, kQ4Recent = 32;  // the engine's group; rings for one-token steps

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Layer {
  std::vector<uint8_t> k, v;
  std::vector<float> k_side, v_side;      // q8: scales; q4: (scale, min) pairs
  std::vector<float> k_recent, v_recent;  // q4: the rings
};

struct Setup {
  int depth = 2048;
  DType type = DType::kF16;
  std::vector<Layer> layers;
  std::vector<float> q, scores, out;
  OpParams params;
};

// Slots per KV head: depth + 1, rounded up to whole q4 groups.
int64_t Slots(const Setup& s) {
  const int64_t slots = s.depth + 1;
  return s.type == kDTypeKvQ4 ? (slots + kQ4Group - 1) / kQ4Group * kQ4Group : slots;
}

// A q4 layer: random codes, (scale, min) pairs and ring rows.
void FillQ4(Layer* l, size_t rows, std::mt19937* rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::uniform_int_distribution<int> byte(0, 255);
  for (std::vector<uint8_t>* t : {&l->k, &l->v}) {
    t->resize(rows * kHeadDim / 2);
    for (uint8_t& b : *t) b = static_cast<uint8_t>(byte(*rng));
  }
  l->k_side.resize(rows / kQ4Group * 2 * kHeadDim);
  l->v_side.resize(rows * 2);
  for (std::vector<float>* t : {&l->k_side, &l->v_side}) {
    for (size_t i = 0; i < t->size(); ++i) (*t)[i] = dist(*rng) * (i % 2 == 0 ? 0.1f : 1.0f);
  }
  for (std::vector<float>* t : {&l->k_recent, &l->v_recent}) {
    t->resize(size_t{kKvHeads} * kQ4Recent * kHeadDim);
    for (float& x : *t) x = dist(*rng);
  }
}

void Fill(Setup* s, int64_t elem) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const size_t values = size_t{kKvHeads} * size_t(Slots(*s)) * kHeadDim;
  s->layers.resize(kLayers);
  for (Layer& l : s->layers) {
    if (s->type == kDTypeKvQ4) {
      FillQ4(&l, values / kHeadDim, &rng);
      continue;
    }
    for (std::vector<uint8_t>* t : {&l.k, &l.v}) {
      t->resize(values * size_t(elem));
      for (size_t i = 0; i < values; ++i) {
        const float x = dist(rng);
        if (s->type == DType::kF16) {
          const uint16_t h = FloatToHalf(x);
          std::memcpy(t->data() + 2 * i, &h, 2);
        } else if (s->type == DType::kF32) {
          std::memcpy(t->data() + 4 * i, &x, 4);
        } else {
          (*t)[i] = static_cast<uint8_t>(static_cast<int8_t>(x * 127));
        }
      }
    }
    l.k_side.assign(values / kHeadDim, 0.01f);
    l.v_side.assign(values / kHeadDim, 0.01f);
  }
  s->q.resize(kHeads * kHeadDim);
  for (float& x : s->q) x = dist(rng);
  s->scores.resize(size_t{kHeads} * size_t(Slots(*s)));
  s->out.resize(kHeads * kHeadDim);
  OpParams& p = s->params;
  p.n_heads = kHeads;
  p.n_kv_heads = kKvHeads;
  p.head_dim = kHeadDim;
  p.scale = 0.125f;
  p.cache_slots = static_cast<int32_t>(Slots(*s));
  p.kv_quant = s->type == kDTypeI8 ? KvQuant::kQ8 : KvQuant::kNone;
  if (s->type == kDTypeKvQ4) {
    p.kv_quant = KvQuant::kQ4;
    p.kv_group = kQ4Group;
    p.recent_slots = kQ4Recent;
  }
}

ref::KvCacheView View(Setup& s, int layer) {
  Layer& l = s.layers[size_t(layer)];
  ref::KvCacheView c;
  c.params = s.params;
  c.type = s.type;
  c.k = l.k.data();
  c.v = l.v.data();
  if (s.type == kDTypeI8 || s.type == kDTypeKvQ4) {
    c.k_side = l.k_side.data();
    c.v_side = l.v_side.data();
  }
  if (s.type == kDTypeKvQ4) {
    c.k_recent = l.k_recent.data();
    c.v_recent = l.v_recent.data();
  }
  return c;
}

// Seconds per layer for `calls` layers, tasks of `heads_per_task` heads claimed in turn by
// `threads` threads.
double Time(Setup& s, AttentionFn fn, int heads_per_task, int threads, int calls) {
  const double start = Seconds();
  for (int c = 0; c < calls; ++c) {
    const ref::KvCacheView view = View(s, c % kLayers);
    std::atomic<int> next{0};
    auto work = [&] {
      for (int t; (t = next.fetch_add(1)) < kHeads / heads_per_task;) {
        const int h = t * heads_per_task;
        fn(s.q.data(), 1, s.depth, view, s.scores.data(), s.out.data(), h, h + heads_per_task);
      }
    };
    if (threads == 1) {
      work();
    } else {
      std::thread helper(work);
      work();
      helper.join();
    }
  }
  return (Seconds() - start) / calls;
}

int Run(int argc, char** argv) {
  Setup s;
  int reps = 7, threads = 1;
  bool reference = true;
  std::string kv = "f16", isa = "best";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--depth")
      s.depth = std::atoi(argv[i + 1]);
    else if (flag == "--reps")
      reps = std::atoi(argv[i + 1]);
    else if (flag == "--layers")
      kLayers = std::max(1, std::atoi(argv[i + 1]));
    else if (flag == "--threads")
      threads = std::atoi(argv[i + 1]);
    else if (flag == "--kv")
      kv = argv[i + 1];
    else if (flag == "--isa")
      isa = argv[i + 1];
    else if (flag == "--reference")
      reference = std::string(argv[i + 1]) != "no";
    else {
      std::fprintf(stderr, "attention_bench: unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  if (s.depth < 1 || reps < 1 || threads < 1 || threads > 2) {
    std::fprintf(stderr, "attention_bench: bad --depth, --reps or --threads\n");
    return 2;
  }
  if (kv != "f16" && kv != "f32" && kv != "q8" && kv != "q4") {
    std::fprintf(stderr, "attention_bench: --kv takes f16, f32, q8 or q4\n");
    return 2;
  }
  s.type = kv == "f32"  ? DType::kF32
           : kv == "q8" ? kDTypeI8
           : kv == "q4" ? kDTypeKvQ4
                        : DType::kF16;
  const int64_t elem = s.type == DType::kF32 ? 4 : s.type == DType::kF16 ? 2 : 1;
  Fill(&s, elem);
  const char* name = "";
  bool groups = false;
  CpuFeatures features = DetectCpuFeatures();
  if (isa == "avx2") features.avx512f = false;
  AttentionFn fast = SelectAttention(features, kHeadDim, &name, &groups);
  const int per_task = groups ? kHeads / kKvHeads : 1;
  // q4: codes of keys and values, each group's key (scale, min) pairs, each value's pair.
  const double bytes = s.type == kDTypeKvQ4
                           ? kKvHeads * (s.depth + 1) * (kHeadDim + 8.0 * kHeadDim / kQ4Group + 8.0)
                           : 2.0 * kKvHeads * (s.depth + 1) * kHeadDim * double(elem);
  std::vector<double> t_fast, t_ref;
  const int calls = kLayers * 4;
  for (int r = 0; r < reps; ++r) {
    t_fast.push_back(Time(s, fast, per_task, threads, calls));
    t_ref.push_back(reference ? Time(s, ref::Attention, 1, threads, kLayers) : 0.0);
  }
  std::sort(t_fast.begin(), t_fast.end());
  std::sort(t_ref.begin(), t_ref.end());
  const double f = t_fast[t_fast.size() / 2], rf = t_ref[t_ref.size() / 2];
  std::printf("depth %d, %s cache, %d thread(s), %.0f KiB of cache per layer\n", s.depth,
              kv.c_str(), threads, bytes / 1024);
  std::printf("%-10s %9.1f us/layer %7.2f GB/s  (best %.1f us)\n", name, f * 1e6, bytes / f / 1e9,
              t_fast.front() * 1e6);
  std::printf("%-10s %9.1f us/layer %7.2f GB/s\n", "reference", rf * 1e6, bytes / rf / 1e9);
  std::printf("per token (30 layers): %s %.2f ms\n", name, f * kLayers * 1e3);
  return 0;
}

}  // namespace
}  // namespace staticlm::cpu

int main(int argc, char** argv) {
  return staticlm::cpu::Run(argc, argv);
}
