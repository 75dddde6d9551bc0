// Single-thread matmul speed per ISA on the shapes of SmolLM2-135M and Gemma 3 270M (width 640,
// FFN 2048: its Q4_K, Q5_0 and Q6_K weights), reported in time per call, weight bytes per
// second (the limit of a memory-bound matvec) and GFLOP/s (2 · n_out · n_in · rows per call).
//
//   hot:  the same weights every iteration (they stay in L2/L3): the kernel's compute speed.
//   cold: a different copy of the weights each iteration, cycling through more than the last
//         level cache, as a decode step streams every layer's weights from memory.
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <vector>

#include "backends/cpu/fast_matmul.h"
#include "backends/cpu/half.h"

namespace staticlm::cpu {
namespace {

constexpr size_t kColdBytes = size_t{512} << 20;  // well past a 105 MiB L3

// Valid blocks: small finite scales and random quants (no NaN or subnormal slow paths).
std::vector<uint8_t> MakeWeights(DType type, int64_t n_out, int64_t n_in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-0.05f, 0.05f);
  DTypeInfo info = GetDTypeInfo(type);
  std::vector<uint8_t> w(DTypeBytes(type, static_cast<uint64_t>(n_out * n_in)));
  if (info.block_elements == 1) {
    for (size_t i = 0; i < w.size() / info.block_bytes; ++i) {
      float v = dist(rng);
      uint16_t h =
          type == DType::kF16 ? FloatToHalf(v) : static_cast<uint16_t>(FloatToBits(v) >> 16);
      if (type == DType::kF32)
        std::memcpy(&w[4 * i], &v, 4);
      else
        std::memcpy(&w[2 * i], &h, 2);
    }
    return w;
  }
  for (uint8_t& b : w) b = static_cast<uint8_t>(rng());
  // Where dtype.h puts the f16 scale d (Q6_K: last) and the f16 m or dmin (if any).
  const size_t d_at = type == DType::kQ6_K ? 208 : 0;
  const bool has_m =
      type == DType::kQ4_1 || type == DType::kQ5_1 || type == DType::kQ4_K || type == DType::kQ5_K;
  for (size_t b = 0; b < w.size() / info.block_bytes; ++b) {
    uint8_t* block = &w[b * info.block_bytes];
    uint16_t d = FloatToHalf(0.003f + 0.001f * dist(rng)), m = FloatToHalf(-0.05f);
    std::memcpy(block + d_at, &d, 2);
    if (has_m) std::memcpy(block + 2, &m, 2);
  }
  return w;
}

void BM_MatMul(benchmark::State& state, MatMulIsa isa, DType type, int64_t n_out, int64_t n_in,
               int64_t rows, bool cold) {
  MatMulFn fn = MatMulFor(isa);
  if (fn == nullptr || !IsaSupported(isa, DetectCpuFeatures())) {
    state.SkipWithError("ISA not available on this machine");
    return;
  }
  std::vector<uint8_t> one = MakeWeights(type, n_out, n_in, 1);
  size_t copies = cold ? kColdBytes / one.size() + 1 : 1;
  std::vector<uint8_t> weights(one.size() * copies);
  for (size_t c = 0; c < copies; ++c) std::memcpy(&weights[c * one.size()], one.data(), one.size());
  std::vector<float> x(static_cast<size_t>(rows * n_in), 0.5f);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 17) * 0.01f - 0.08f;
  std::vector<float> y(static_cast<size_t>(rows * n_out));
  size_t next = 0;
  for (auto _ : state) {
    fn(type, &weights[next * one.size()], n_out, n_in, x.data(), rows, y.data());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
    next = next + 1 == copies ? 0 : next + 1;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(one.size()));
  state.counters["GFLOP/s"] = benchmark::Counter(
      2e-9 * double(n_out) * double(n_in) * double(rows) * double(state.iterations()),
      benchmark::Counter::kIsRate);
}

struct Shape {
  const char* name;
  DType type;
  int64_t n_out, n_in, rows;
};

const Shape kShapes[] = {
    {"ffn_up_q4_1_1536x576", DType::kQ4_1, 1536, 576, 1},
    {"ffn_down_q4_1_576x1536", DType::kQ4_1, 576, 1536, 1},
    {"attn_k_q4_1_192x576", DType::kQ4_1, 192, 576, 1},
    {"output_q8_0_49152x576", DType::kQ8_0, 49152, 576, 1},
    {"ffn_up_f16_1536x576", DType::kF16, 1536, 576, 1},
    {"prefill64_ffn_up_q4_1_1536x576", DType::kQ4_1, 1536, 576, 64},
    {"prefill64_output_q8_0_49152x576", DType::kQ8_0, 49152, 576, 64},
    // Gemma 3 270M: FFN up/gate (2048 × 640) and down (640 × 2048) in its weight types.
    {"gemma_up_q4_k_2048x640", DType::kQ4_K, 2048, 640, 1},
    {"gemma_down_q4_k_640x2048", DType::kQ4_K, 640, 2048, 1},
    {"gemma_up_q5_0_2048x640", DType::kQ5_0, 2048, 640, 1},
    {"gemma_down_q5_0_640x2048", DType::kQ5_0, 640, 2048, 1},
    {"gemma_up_q6_k_2048x640", DType::kQ6_K, 2048, 640, 1},
    {"gemma_down_q6_k_640x2048", DType::kQ6_K, 640, 2048, 1},
    {"prefill64_gemma_up_q4_k_2048x640", DType::kQ4_K, 2048, 640, 64},
    {"prefill64_gemma_down_q4_k_640x2048", DType::kQ4_K, 640, 2048, 64},
    {"prefill64_gemma_up_q5_0_2048x640", DType::kQ5_0, 2048, 640, 64},
    {"prefill64_gemma_down_q5_0_640x2048", DType::kQ5_0, 640, 2048, 64},
    {"prefill64_gemma_up_q6_k_2048x640", DType::kQ6_K, 2048, 640, 64},
    {"prefill64_gemma_down_q6_k_640x2048", DType::kQ6_K, 640, 2048, 64},
};

void RegisterAll() {
  const MatMulIsa isas[] = {MatMulIsa::kReference, MatMulIsa::kAvx2, MatMulIsa::kAvx512};
  for (const Shape& s : kShapes) {
    for (MatMulIsa isa : isas) {
      for (bool cold : {false, true}) {
        if (cold && s.rows > 1) continue;  // prefill is compute-bound: hot only
        std::string name =
            std::string(s.name) + "/" + MatMulIsaName(isa) + (cold ? "/cold" : "/hot");
        auto* b = benchmark::RegisterBenchmark(name.c_str(), BM_MatMul, isa, s.type, s.n_out,
                                               s.n_in, s.rows, cold);
        b->Unit(benchmark::kMicrosecond);
        if (isa == MatMulIsa::kReference) b->MinTime(0.2);
      }
    }
  }
}

}  // namespace
}  // namespace staticlm::cpu

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  staticlm::cpu::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
