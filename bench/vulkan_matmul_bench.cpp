// The Vulkan matmuls of one SmolLM2-135M decode step (or prefill chunk), one kind at a time,
// each as a one-op plan on the Vulkan backend: milliseconds per product and the weight bytes
// per second that implies. What limits staticlm's decode on lavapipe is these products, so
// shader variants are compared here before they are tried end to end.
//
//   vulkan_matmul_bench [--rows 1] [--reps 5] [--style 0|1] [--only head|qkv|gate_up|down]
//
// Cases (weights Q4_1 except the head, as in the default model file; random values):
//   head     49152 × 576 Q8_0          (the tied output head)
//   qkv      576, 192, 192 × 576       (three products sharing x, as the plan records them)
//   gate_up  1536 × 576 twice, SiLU-multiplied (the fused form)
//   down     576 × 1536, added into the residual
// A model step runs 30 of each layer case and one head. Exits 77 without a Vulkan device.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/vulkan_test_support.h"
#if defined(STATICLM_HAVE_VULKAN)
#include "backends/vulkan/vulkan_backend.h"
#endif

namespace staticlm::vktest {
namespace {

#if defined(STATICLM_HAVE_VULKAN)

struct Options {
  int rows = 1;
  int reps = 5;
  int style = -1;  // the device's choice
  std::string only;
};

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

uint32_t AddWeights(PlanHarness& h, DType type, int64_t n_out, int64_t n_in, const char* name) {
  return h.Tensor(BufferId::kWeights, type, {n_out, n_in}, name);
}

// Builds the case's plan; returns the weight bytes one run reads.
uint64_t BuildCase(const std::string& name, int rows, PlanHarness& h) {
  const int64_t d = 576, ffn = 1536;
  uint32_t x = h.Tensor(BufferId::kArena, DType::kF32, {rows, name == "down" ? ffn : d}, "x");
  // Some room before the first weight, as a model file has (a binding may start before it).
  h.Tensor(BufferId::kWeights, DType::kF32, {64}, "pad");
  std::vector<uint32_t> weights;
  if (name == "head") {
    weights.push_back(AddWeights(h, DType::kQ8_0, 49152, d, "head"));
    uint32_t y = h.Tensor(BufferId::kArena, DType::kF32, {rows, 49152}, "y");
    h.AddOp(OpKind::kMatMul, {x, weights[0]}, {y}, OpParams{});
  } else if (name == "qkv") {
    for (int64_t n : {d, int64_t(192), int64_t(192)}) {
      weights.push_back(AddWeights(h, DType::kQ4_1, n, d, "w"));
    }
    uint32_t q = h.Tensor(BufferId::kArena, DType::kF32, {rows, d}, "q");
    uint32_t k = h.Tensor(BufferId::kArena, DType::kF32, {rows, 192}, "k");
    uint32_t v = h.Tensor(BufferId::kArena, DType::kF32, {rows, 192}, "v");
    OpParams p;
    p.n_weights = 3;
    h.AddOp(OpKind::kMatMul, {x, weights[0], weights[1], weights[2]}, {q, k, v}, p);
  } else if (name == "gate_up") {
    weights.push_back(AddWeights(h, DType::kQ4_1, ffn, d, "gate"));
    weights.push_back(AddWeights(h, DType::kQ4_1, ffn, d, "up"));
    uint32_t y0 = h.Tensor(BufferId::kArena, DType::kF32, {rows, ffn}, "y0");
    uint32_t y1 = h.Tensor(BufferId::kArena, DType::kF32, {rows, ffn}, "y1");
    OpParams p;
    p.n_weights = 2;
    p.silu_mul = true;
    h.AddOp(OpKind::kMatMul, {x, weights[0], weights[1]}, {y0, y1}, p);
  } else {
    weights.push_back(AddWeights(h, DType::kQ4_1, d, ffn, "down"));
    uint32_t y = h.Tensor(BufferId::kArena, DType::kF32, {rows, d}, "y");
    uint32_t acc = h.Tensor(BufferId::kArena, DType::kF32, {rows, d}, "acc");
    OpParams p;
    p.accumulate = true;
    h.AddOp(OpKind::kMatMul, {x, weights[0]}, {y, acc}, p);
  }
  h.Allocate();
  uint64_t bytes = 0;
  uint32_t seed = 1;
  for (uint32_t w : weights) {
    const TensorRegion& t = h.plan.tensors[w];
    std::vector<uint8_t> b = RandomWeights(t.dtype, uint64_t(t.elements()), seed++);
    std::memcpy(h.Data(w), b.data(), b.size());
    bytes += b.size();
  }
  PutFloats(h, x, RandomFloats(size_t(h.plan.tensors[x].elements()), 9));
  return bytes;
}

int RunCase(const std::string& name, const Options& o) {
  PlanHarness h(o.rows);
  uint64_t bytes = BuildCase(name, o.rows, h);
  vulkan::VulkanTestOptions test;
  test.force_matmul_style = o.style;
  vulkan::VulkanBackend vk(BackendOptions{}, test);
  const Plan* plans[1] = {&h.plan};
  Status s = vk.Prepare(plans, 1, h.Binding());
  if (!s.ok()) {
    std::fprintf(stderr, "vulkan_matmul_bench: %s\n", s.message());
    return s.code() == StatusCode::kUnsupported ? 77 : 1;
  }
  StepParams step{o.rows, 0};
  for (int i = 0; i < 2; ++i) {  // warm-up: first-use costs of the driver
    s = vk.Execute(0, step);
    if (!s.ok()) {
      std::fprintf(stderr, "vulkan_matmul_bench: %s\n", s.message());
      return 1;
    }
  }
  std::vector<double> ms;
  for (int i = 0; i < o.reps; ++i) {
    double t0 = Seconds();
    s = vk.Execute(0, step);
    ms.push_back((Seconds() - t0) * 1e3);
    if (!s.ok()) return 1;
  }
  std::sort(ms.begin(), ms.end());
  double median = ms[ms.size() / 2];
  std::printf(
      "%-8s rows %d style %d: median %8.2f ms (min %8.2f, max %8.2f)  %6.2f GB/s of weights\n",
      name.c_str(), o.rows, vk.matmul_style(), median, ms.front(), ms.back(),
      double(bytes) / (median * 1e-3) / 1e9);
  return 0;
}

int Main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--rows") {
      o.rows = std::atoi(argv[i + 1]);
    } else if (k == "--reps") {
      o.reps = std::atoi(argv[i + 1]);
    } else if (k == "--style") {
      o.style = std::atoi(argv[i + 1]);
    } else if (k == "--only") {
      o.only = argv[i + 1];
    } else {
      std::fprintf(stderr, "vulkan_matmul_bench: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if (o.rows < 1 || o.reps < 1) {
    std::fprintf(stderr, "vulkan_matmul_bench: --rows and --reps must be at least 1\n");
    return 2;
  }
  for (const char* name : {"head", "qkv", "gate_up", "down"}) {
    if (!o.only.empty() && o.only != name) continue;
    int rc = RunCase(name, o);
    if (rc != 0) return rc;
  }
  return 0;
}

#else

int Main(int, char**) {
  std::fprintf(stderr, "vulkan_matmul_bench: built without Vulkan\n");
  return 77;
}

#endif

}  // namespace
}  // namespace staticlm::vktest

int main(int argc, char** argv) {
  return staticlm::vktest::Main(argc, argv);
}
