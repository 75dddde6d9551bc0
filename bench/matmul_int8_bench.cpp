// f32-activation matmul (the fast kernel the CPU backend uses) against the integer-activation
// ones (quantize x to int8 or int16, then integer dots), and int8 with packed weights
// (packed_weights.h) against int8 in the file layout, on SmolLM2-135M's or Gemma 3's shapes, as
// ratios from the same run.
//
// The machine is shared and noisy, so the kernels are timed in alternation: each rep runs the
// f32, int8 and int16 kernels over the same weights, and the report gives each one's median
// over the reps and the medians of the per-rep ratios (f32 time / integer time: > 1 means the
// integer kernel is faster). Decode (rows = 1) streams a fresh copy of the weights per call,
// cycling through --pool-mib of copies, as a decode step streams every layer from memory; prefill
// (rows = 64) reuses one copy (it is compute-bound).
//
//   matmul_int8_bench [--reps 9] [--threads 1|2] [--pool-mib 256] [--rows-prefill 64]
//                     [--isa avx512|avx2]   (avx512: f32 AVX-512 vs VNNI; avx2: both AVX2)
//                     [--shapes smollm2|gemma3|types] [--match TEXT]  (only shapes whose name
//                     has TEXT; types: every integer weight type at one shape)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/fast_matmul.h"
#include "backends/cpu/half.h"
#include "backends/cpu/matmul_int8.h"
#include "backends/cpu/packed_weights.h"
#include "platform/aligned_buffer.h"

namespace staticlm::cpu {
namespace {

struct Shape {
  const char* name;
  DType type;
  int64_t n_out, n_in;
};

const Shape kShapes[] = {
    {"attn_q/o 576x576 Q4_1", DType::kQ4_1, 576, 576},
    {"ffn_gate/up 1536x576 Q4_1", DType::kQ4_1, 1536, 576},
    {"ffn_down 576x1536 Q4_1", DType::kQ4_1, 576, 1536},
    {"attn_q/o 576x576 Q8_0", DType::kQ8_0, 576, 576},
    {"ffn_gate/up 1536x576 Q8_0", DType::kQ8_0, 1536, 576},
    {"ffn_down 576x1536 Q8_0", DType::kQ8_0, 576, 1536},
    {"output 49152x576 Q8_0", DType::kQ8_0, 49152, 576},
};

// Gemma 3 270M (Q4_K_M file): the Q5_0 products, the K-quant ffn_down halves (Q6_K has int8
// kernels only), and the tied Q8_0 head that dominates a decode step's bytes.
const Shape kGemmaShapes[] = {
    {"attn_q 1024x640 Q5_0", DType::kQ5_0, 1024, 640},
    {"ffn_gate/up 2048x640 Q5_0", DType::kQ5_0, 2048, 640},
    {"ffn_down 640x2048 Q4_K", DType::kQ4_K, 640, 2048},
    {"ffn_down 640x2048 Q6_K", DType::kQ6_K, 640, 2048},
    {"attn_v 256x640 Q8_0", DType::kQ8_0, 256, 640},
    {"output 262144x640 Q8_0", DType::kQ8_0, 262144, 640},
};

// Every integer weight type: the 32-value blocks at SmolLM2's ffn_gate/up shape, the K-quants at
// Gemma 3's ffn_down shape (rows of whole 256-value super-blocks).
const Shape kTypeShapes[] = {
    {"ffn_gate/up 1536x576 Q4_0", DType::kQ4_0, 1536, 576},
    {"ffn_gate/up 1536x576 Q4_1", DType::kQ4_1, 1536, 576},
    {"ffn_gate/up 1536x576 Q5_0", DType::kQ5_0, 1536, 576},
    {"ffn_gate/up 1536x576 Q5_1", DType::kQ5_1, 1536, 576},
    {"ffn_gate/up 1536x576 Q8_0", DType::kQ8_0, 1536, 576},
    {"ffn_down 640x2048 Q4_K", DType::kQ4_K, 640, 2048},
    {"ffn_down 640x2048 Q5_K", DType::kQ5_K, 640, 2048},
    {"ffn_down 640x2048 Q6_K", DType::kQ6_K, 640, 2048},
};

std::vector<uint8_t> MakeWeights(DType type, int64_t n_out, int64_t n_in) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-0.05f, 0.05f);
  const DTypeInfo info = GetDTypeInfo(type);
  std::vector<uint8_t> w(DTypeBytes(type, static_cast<uint64_t>(n_out * n_in)));
  for (uint8_t& b : w) b = static_cast<uint8_t>(rng());
  for (size_t b = 0; b < w.size() / info.block_bytes; ++b) {
    uint8_t* block = &w[b * info.block_bytes];
    uint16_t d = FloatToHalf(0.003f + 0.001f * dist(rng)), m = FloatToHalf(-0.05f);
    std::memcpy(block + (type == DType::kQ6_K ? 208 : 0), &d, 2);  // Q6_K's d ends its block
    if (type == DType::kQ4_1 || type == DType::kQ5_1 || type == DType::kQ4_K ||
        type == DType::kQ5_K) {
      std::memcpy(block + 2, &m, 2);
    }
  }
  return w;
}

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Setup {
  const Shape* shape;
  int64_t rows;
  // `copies` copies of the weights, back to back, and the same copies packed (packed_weights.h)
  // if they can be; on huge pages where the system allows, as a context's packed weights are.
  AlignedBuffer pool;
  AlignedBuffer packed_pool;
  size_t one = 0, packed_one = 0, copies = 1, calls = 1;
  std::vector<float> x;
  MatMulRangeFn f32;
  IntKernels int8, int16;
};

// Runs `calls` products on `threads` threads (each its share of the outputs), cycling through
// the copies; returns seconds per call.
template <class Product>
double Time(const Setup& s, int threads, Product product, bool packed = false) {
  const uint8_t* weights = packed ? s.packed_pool.data() : s.pool.data();
  const size_t one = packed ? s.packed_one : s.one;
  auto work = [&](int t) {
    const int64_t n = s.shape->n_out;
    const int64_t begin = n * t / threads / 16 * 16,
                  end = t + 1 == threads ? n : n * (t + 1) / threads / 16 * 16;
    std::vector<float> y(static_cast<size_t>(s.rows * n));
    QuantizedBuffer buffer;
    if (!buffer.Init(s.rows, s.shape->n_in).ok()) std::abort();
    for (size_t c = 0; c < s.calls; ++c) {
      product(weights + (c % s.copies) * one, y.data(), begin, end, buffer);
    }
  };
  const double start = Seconds();
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work, t);
  work(0);
  for (std::thread& t : pool) t.join();
  return (Seconds() - start) / static_cast<double>(s.calls);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// The kernels compared: the f32 one and the integer ones of one instruction set.
struct Kernels {
  MatMulRangeFn f32;
  IntKernels int8, int16;
};

void Measure(const Shape& shape, int64_t rows, int reps, int threads, size_t pool_bytes,
             const Kernels& kernels) {
  Setup s;
  s.shape = &shape;
  s.rows = rows;
  std::vector<uint8_t> one = MakeWeights(shape.type, shape.n_out, shape.n_in);
  s.one = one.size();
  s.copies = rows == 1 ? std::max<size_t>(2, pool_bytes / one.size()) : 1;
  if (!s.pool.Allocate(s.one * s.copies, 64, "pool", Pages::kHugeWherePossible).ok()) std::abort();
  for (size_t c = 0; c < s.copies; ++c) std::memcpy(s.pool.data() + c * s.one, one.data(), s.one);
  const bool packable = PackedSupportsType(shape.type) && kernels.int8.packed_matmul != nullptr;
  if (packable) {
    s.packed_one = PackedBytes(shape.type, shape.n_out, shape.n_in);
    if (!s.packed_pool
             .Allocate(s.packed_one * s.copies, 64, "packed pool", Pages::kHugeWherePossible)
             .ok()) {
      std::abort();
    }
    for (size_t c = 0; c < s.copies; ++c) {
      PackX16(shape.type, one.data(), shape.n_out, shape.n_in,
              s.packed_pool.data() + c * s.packed_one);
    }
  }
  // Enough calls for ~100 MB of weights per timing (at least one pass over the copies).
  s.calls = std::max<size_t>(s.copies, (size_t{100} << 20) / s.one / (rows == 1 ? 1 : 8));
  s.x.resize(static_cast<size_t>(rows * shape.n_in));
  std::mt19937 rng(2);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (float& v : s.x) v = dist(rng);
  s.f32 = kernels.f32;
  s.int8 = kernels.int8;
  s.int16 = kernels.int16;
  const int64_t n_out = shape.n_out, n_in = shape.n_in;
  auto f32 = [&](const uint8_t* w, float* y, int64_t b, int64_t e, QuantizedBuffer&) {
    s.f32(shape.type, w, n_out, n_in, s.x.data(), rows, y, b, e);
  };
  auto integer = [&](const IntKernels& k) {
    return [&s, &k, &shape, rows, n_out, n_in](const uint8_t* w, float* y, int64_t b, int64_t e,
                                               QuantizedBuffer& buffer) {
      QuantizedActivations q = buffer.Quantize(k, s.x.data(), rows, n_in);
      k.matmul(shape.type, w, n_out, q, y, b, e);
    };
  };
  auto int8 = integer(s.int8);
  auto int16 = integer(s.int16);
  auto int8_packed = [&s, &shape, rows, n_out, n_in](const uint8_t* w, float* y, int64_t b,
                                                     int64_t e, QuantizedBuffer& buffer) {
    QuantizedActivations q = buffer.Quantize(s.int8, s.x.data(), rows, n_in);
    s.int8.packed_matmul(shape.type, w, n_out, q, y, b, e);
  };
  const bool has_int16 = IntSupportsType(shape.type, 16);  // else int16 columns read 0
  Time(s, threads, f32);                                   // warm-up: page in the pool
  Time(s, threads, int8);
  std::vector<double> tf, t8, t16, r8, r16, tp, rp;
  for (int r = 0; r < reps; ++r) {
    tf.push_back(Time(s, threads, f32));
    t8.push_back(Time(s, threads, int8));
    t16.push_back(has_int16 ? Time(s, threads, int16) : 0.0);
    if (packable) {
      tp.push_back(Time(s, threads, int8_packed, true));
      rp.push_back(t8.back() / tp.back());
    }
    r8.push_back(tf.back() / t8.back());
    r16.push_back(has_int16 ? tf.back() / t16.back() : 0.0);
  }
  std::printf(
      "%-27s rows %2lld  f32 %8.1f us  int8 %8.1f us  int16 %8.1f us  f32/int8 %5.2f  "
      "f32/int16 %5.2f  (GB/s: f32 %4.1f int8 %4.1f int16 %4.1f)\n",
      shape.name, static_cast<long long>(rows), Median(tf) * 1e6, Median(t8) * 1e6,
      Median(t16) * 1e6, Median(r8), Median(r16), static_cast<double>(s.one) / Median(tf) / 1e9,
      static_cast<double>(s.one) / Median(t8) / 1e9,
      has_int16 ? static_cast<double>(s.one) / Median(t16) / 1e9 : 0.0);
  if (packable) {  // packed int8 against int8 in the file layout, same rounds
    std::printf("%-27s rows %2lld  int8 packed %8.1f us  int8/packed %5.2f  (GB/s: %4.1f)\n", "",
                static_cast<long long>(rows), Median(tp) * 1e6, Median(rp),
                static_cast<double>(s.packed_one) / Median(tp) / 1e9);
  }
  std::fflush(stdout);
}

}  // namespace
}  // namespace staticlm::cpu

int main(int argc, char** argv) {
  using namespace staticlm::cpu;
  int reps = 9, threads = 1;
  bool avx2 = false;
  std::string shape_set = "smollm2";
  std::string match;
  int64_t prefill_rows = 64;
  size_t pool_mib = 256;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--reps")
      reps = std::atoi(argv[i + 1]);
    else if (flag == "--threads")
      threads = std::atoi(argv[i + 1]);
    else if (flag == "--pool-mib")
      pool_mib = static_cast<size_t>(std::atoll(argv[i + 1]));
    else if (flag == "--rows-prefill")
      prefill_rows = std::atoll(argv[i + 1]);
    else if (flag == "--isa")
      avx2 = std::string(argv[i + 1]) == "avx2";
    else if (flag == "--shapes")
      shape_set = argv[i + 1];
    else if (flag == "--match")
      match = argv[i + 1];
    else {
      std::fprintf(stderr, "matmul_int8_bench: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  const staticlm::CpuFeatures features = staticlm::DetectCpuFeatures();
  const MatMulIsa f32_isa = avx2 ? MatMulIsa::kAvx2 : MatMulIsa::kAvx512;
  const IntIsa int_isa = avx2 ? IntIsa::kAvx2 : IntIsa::kAvx512Vnni;
  const Kernels kernels{MatMulRangeFor(f32_isa), IntKernelsFor(int_isa, 8),
                        IntKernelsFor(int_isa, 16)};
  if (kernels.f32 == nullptr || kernels.int8.matmul == nullptr ||
      !IsaSupported(f32_isa, features) || !IntIsaSupported(int_isa, features)) {
    std::fprintf(stderr, "matmul_int8_bench: this CPU cannot run the %s kernels (%s)\n",
                 avx2 ? "avx2" : "avx512 (VNNI)", staticlm::DescribeCpuFeatures(features));
    return 77;
  }
  std::printf(
      "%s f32 vs %s; threads %d, reps %d, medians; ratio > 1: the integer kernel is "
      "faster\n",
      MatMulIsaName(f32_isa), kernels.int8.name, threads, reps);
  std::vector<Shape> shapes(std::begin(kShapes), std::end(kShapes));
  if (shape_set == "gemma3") {
    shapes.assign(std::begin(kGemmaShapes), std::end(kGemmaShapes));
  } else if (shape_set == "types") {
    shapes.assign(std::begin(kTypeShapes), std::end(kTypeShapes));
  } else if (shape_set != "smollm2") {
    std::fprintf(stderr, "matmul_int8_bench: --shapes takes smollm2, gemma3 or types\n");
    return 2;
  }
  std::erase_if(
      shapes, [&](const Shape& s) { return std::string(s.name).find(match) == std::string::npos; });
  for (const Shape& shape : shapes) Measure(shape, 1, reps, threads, pool_mib << 20, kernels);
  for (const Shape& shape : shapes) {
    if (shape.n_out <= 2048) Measure(shape, prefill_rows, reps, threads, pool_mib << 20, kernels);
  }
  return 0;
}
