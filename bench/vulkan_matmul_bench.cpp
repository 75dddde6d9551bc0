// The Vulkan matmuls of one SmolLM2-135M decode step (or prefill chunk), one kind at a time,
// each as a one-op plan on the Vulkan backend: milliseconds per product and the weight bytes
// per second that implies. What limits staticlm's decode on lavapipe is these products, so
// shader variants are compared here before they are tried end to end.
//
//   vulkan_matmul_bench [--rows 1] [--reps 5] [--style 0|1|2] [--only head|qkv|gate_up|down]
//                       [--type Q4_1|Q4_0|Q5_0|Q5_1|Q8_0|Q4_K|Q5_K|Q6_K|F16|F32|BF16]
//                       [--shapes smollm2|gemma3]
//
// Cases (weights Q4_1 except the head, as in the default model file, or --type's; random
// values):
//   head     49152 × 576 Q8_0          (the tied output head)
//   qkv      576, 192, 192 × 576       (three products sharing x, as the plan records them)
//   gate_up  1536 × 576 twice, SiLU-multiplied (the fused form)
//   down     576 × 1536, added into the residual
// A model step runs 30 of each layer case and one head. --shapes gemma3: Gemma 3 270M's
// products instead (d 640, q 1024, k and v 256, FFN 2048, head 262,144 × 640; 18 layers).
// K-quant products need n_in a multiple of 256 (Gemma's down, not SmolLM2's gate_up).
// Exits 77 without a Vulkan device.
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
  DType type = DType::kQ4_1;  // the layer cases' weights
  bool gemma3 = false;        // Gemma 3 270M's shapes instead of SmolLM2's
};

struct Shapes {
  int64_t d, q, kv, ffn, vocab;
};
constexpr Shapes kSmolLm2{576, 576, 192, 1536, 49152};
constexpr Shapes kGemma3{640, 1024, 256, 2048, 262144};

// The weight type named `name` (DTypeName's spelling), or false.
bool ParseWeightType(const std::string& name, DType* type) {
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0,
                  DType::kQ5_1, DType::kQ8_0, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    if (name == DTypeName(t)) {
      *type = t;
      return true;
    }
  }
  return false;
}

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

uint32_t AddWeights(PlanHarness& h, DType type, int64_t n_out, int64_t n_in, const char* name) {
  return h.Tensor(BufferId::kWeights, type, {n_out, n_in}, name);
}

// Builds the case's plan; returns the weight bytes one run reads.
uint64_t BuildCase(const std::string& name, int rows, DType type, const Shapes& shape,
                   PlanHarness& h) {
  const int64_t d = shape.d, ffn = shape.ffn;
  uint32_t x = h.Tensor(BufferId::kArena, DType::kF32, {rows, name == "down" ? ffn : d}, "x");
  // Some room before the first weight, as a model file has (a binding may start before it).
  h.Tensor(BufferId::kWeights, DType::kF32, {64}, "pad");
  std::vector<uint32_t> weights;
  if (name == "head") {
    weights.push_back(AddWeights(h, DType::kQ8_0, shape.vocab, d, "head"));
    uint32_t y = h.Tensor(BufferId::kArena, DType::kF32, {rows, shape.vocab}, "y");
    h.AddOp(OpKind::kMatMul, {x, weights[0]}, {y}, OpParams{});
  } else if (name == "qkv") {
    for (int64_t n : {shape.q, shape.kv, shape.kv}) {
      weights.push_back(AddWeights(h, type, n, d, "w"));
    }
    uint32_t q = h.Tensor(BufferId::kArena, DType::kF32, {rows, shape.q}, "q");
    uint32_t k = h.Tensor(BufferId::kArena, DType::kF32, {rows, shape.kv}, "k");
    uint32_t v = h.Tensor(BufferId::kArena, DType::kF32, {rows, shape.kv}, "v");
    OpParams p;
    p.n_weights = 3;
    h.AddOp(OpKind::kMatMul, {x, weights[0], weights[1], weights[2]}, {q, k, v}, p);
  } else if (name == "gate_up") {
    weights.push_back(AddWeights(h, type, ffn, d, "gate"));
    weights.push_back(AddWeights(h, type, ffn, d, "up"));
    uint32_t y0 = h.Tensor(BufferId::kArena, DType::kF32, {rows, ffn}, "y0");
    uint32_t y1 = h.Tensor(BufferId::kArena, DType::kF32, {rows, ffn}, "y1");
    OpParams p;
    p.n_weights = 2;
    p.silu_mul = true;
    h.AddOp(OpKind::kMatMul, {x, weights[0], weights[1]}, {y0, y1}, p);
  } else {
    weights.push_back(AddWeights(h, type, d, ffn, "down"));
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
  uint64_t bytes = BuildCase(name, o.rows, o.type, o.gemma3 ? kGemma3 : kSmolLm2, h);
  vulkan::VulkanTestOptions test;
  test.force_matmul_style = o.style;
  vulkan::VulkanBackend vk(BackendOptions{}, test);
  const Plan* plans[1] = {&h.plan};
  Status s = vk.Prepare(plans, 1, h.Binding());
  if (!s.ok()) {
    std::fprintf(stderr, "vulkan_matmul_bench: %s\n", s.message());
    return s.code() == StatusCode::kUnsupported ? 77 : 1;
  }
  // The device keeps its own arena: x goes there, as a model's previous op would have put it
  // (without this the products read whatever the driver's allocation held, denormal floats
  // included, and ran up to 7x slower at random).
  const int arena = static_cast<int>(BufferId::kArena);
  s = vk.WriteBuffer(BufferId::kArena, 0, h.plan.buffer_bytes[arena], h.bytes[arena].data());
  if (!s.ok()) {
    std::fprintf(stderr, "vulkan_matmul_bench: %s\n", s.message());
    return 1;
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
      "%-8s %-4s rows %d style %d: median %8.2f ms (min %8.2f, max %8.2f)  %6.2f GB/s of "
      "weights%s\n",
      name.c_str(), name == "head" ? "Q8_0" : DTypeName(o.type), o.rows, vk.matmul_style(), median,
      ms.front(), ms.back(), double(bytes) / (median * 1e-3) / 1e9,
      vk.weights_imported() ? " (imported)" : "");
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
    } else if (k == "--shapes" &&
               (std::string(argv[i + 1]) == "smollm2" || std::string(argv[i + 1]) == "gemma3")) {
      o.gemma3 = std::string(argv[i + 1]) == "gemma3";
    } else if (k == "--type") {
      if (!ParseWeightType(argv[i + 1], &o.type)) {
        std::fprintf(stderr, "vulkan_matmul_bench: unknown --type %s\n", argv[i + 1]);
        return 2;
      }
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
