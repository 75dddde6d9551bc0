// After Prepare, the Vulkan backend's steps (each followed by a sample on the device and a
// logits fetch) create no Vulkan object, allocate no device memory, write no descriptor and
// make no heap allocation in staticlm's code: the backend's wrappers count the first three,
// platform/alloc_counter the heap. The plan holds every op kind and every fused matmul form.
// Host allocations the driver makes through our VkAllocationCallbacks are reported
// separately; lavapipe also mallocs inside vkQueueSubmit and on its worker threads on its own:
// alloc_counter counts those as the driver's (every Vulkan command runs inside a
// driver_scope::Scope), so staticlm's own count must be exactly 0 and the driver's is printed.
#include <cstdio>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "platform/alloc_counter.h"
#include "tests/vulkan_test_support.h"
#if defined(STATICLM_HAVE_VULKAN)
#include "backends/vulkan/vulkan_backend.h"
#endif

namespace staticlm::vktest {
namespace {

#if defined(STATICLM_HAVE_VULKAN)

namespace counter = alloc_counter;

// A two-layer-like chain through every op kind; logits land in the io buffer.
PlanHarness EveryOpPlan() {
  const int32_t chunk = 4, d = 64, heads = 4, kv_heads = 2, hd = 16, ffn = 96, vocab = 50;
  const int32_t ctx = 64;
  PlanHarness h(chunk, ctx);
  h.plan.tensors[h.plan.logits_tensor].shape[1] = vocab;
  h.plan.buffer_bytes[int(BufferId::kIo)] += vocab * 4;
  auto W = [&](DType t, int64_t n, int64_t k, const char* name) {
    return h.Tensor(BufferId::kWeights, t, {n, k}, name);
  };
  auto A = [&](int64_t rows, int64_t width, const char* name) {
    return h.Tensor(BufferId::kArena, DType::kF32, {rows, width}, name);
  };
  uint32_t emb = W(DType::kQ8_0, vocab, d, "emb"),
           norm = h.Tensor(BufferId::kWeights, DType::kF32, {d}, "n");
  uint32_t wq = W(DType::kQ4_1, heads * hd, d, "wq"), wk = W(DType::kQ4_1, kv_heads * hd, d, "wk");
  uint32_t wv = W(DType::kQ4_1, kv_heads * hd, d, "wv"), wo = W(DType::kQ4_0, d, heads * hd, "wo");
  uint32_t wg = W(DType::kQ4_1, ffn, d, "wg"), wu = W(DType::kQ4_1, ffn, d, "wu");
  uint32_t wd = W(DType::kF16, d, ffn, "wd");
  uint32_t x = A(chunk, d, "x"), xn = A(chunk, d, "xn"), q = A(chunk, heads * hd, "q");
  uint32_t k = A(chunk, kv_heads * hd, "k"), v = A(chunk, kv_heads * hd, "v");
  uint32_t att = A(chunk, heads * hd, "att"), sc = A(heads, ctx, "scores");
  uint32_t proj = A(chunk, d, "proj"), g = A(chunk, ffn, "g"), u = A(chunk, ffn, "u");
  uint32_t last = A(1, d, "last"), lastn = A(1, d, "lastn");
  uint32_t kc = h.Tensor(BufferId::kKvCache, DType::kF16, {kv_heads, ctx, hd}, "kc");
  uint32_t vc = h.Tensor(BufferId::kKvCache, DType::kF16, {kv_heads, ctx, hd}, "vc");
  OpParams p;
  p.n_heads = heads;
  p.n_kv_heads = kv_heads;
  p.head_dim = hd;
  p.eps = 1e-5f;
  p.rope_base = 10000.0f;
  p.scale = 0.25f;
  p.cache_slots = ctx;
  h.AddOp(OpKind::kEmbed, {emb, h.plan.tokens_tensor}, {x}, p);
  OpParams qkv = p;
  qkv.n_weights = 3;
  qkv.norm_input = true;
  h.AddOp(OpKind::kMatMul, {x, wq, wk, wv, norm}, {q, k, v, xn}, qkv);
  h.AddOp(OpKind::kRope, {}, {q}, p);
  h.AddOp(OpKind::kRope, {}, {k}, p);
  h.AddOp(OpKind::kKvStore, {k, v}, {kc, vc}, p);
  h.AddOp(OpKind::kAttention, {q, kc, vc, sc}, {att}, p);
  OpParams acc = p;
  acc.accumulate = true;
  h.AddOp(OpKind::kMatMul, {att, wo}, {proj, x}, acc);
  OpParams gu = p;
  gu.n_weights = 2;
  gu.norm_input = true;
  gu.silu_mul = true;
  h.AddOp(OpKind::kMatMul, {x, wg, wu, norm}, {g, u, xn}, gu);
  OpParams plain = p;
  h.AddOp(OpKind::kMatMul, {g, wd}, {proj}, plain);
  h.AddOp(OpKind::kAdd, {proj}, {x}, p);
  h.AddOp(OpKind::kSiluMul, {x}, {xn}, p);
  h.AddOp(OpKind::kTakeLast, {x}, {last}, p);
  OpParams one = p;
  one.rows_from_step = false;
  h.AddOp(OpKind::kRmsNorm, {last, norm}, {lastn}, one);
  h.AddOp(OpKind::kMatMul, {lastn, emb}, {h.plan.logits_tensor}, one);
  h.Allocate();
  uint32_t seed = 1;
  for (uint32_t t : {emb, wq, wk, wv, wo, wg, wu, wd}) {
    const TensorRegion& r = h.plan.tensors[t];
    auto b = RandomWeights(r.dtype, uint64_t(r.elements()), seed++);
    std::memcpy(h.Data(t), b.data(), b.size());
  }
  PutFloats(h, norm, RandomFloats(d, 9));
  return h;
}

struct StepCounts {
  vulkan::VkCountersSnapshot before, after;
  uint64_t validation_messages = 0;
  uint64_t heap_events = 0, driver_heap_events = 0, threads = 0;
  std::string first_heap_event;
  bool skipped = false;
};

// Prepares the plan, runs one step, then counts during 36 more of varying length.
StepCounts CountSteps(bool validation) {
  StepCounts c;
  PlanHarness h = EveryOpPlan();
  vulkan::VulkanTestOptions test;
  test.validation = validation;
  // Logits left on the device, then fetched or sampled there (greedy and top-k) every step.
  BackendOptions options;
  options.logits_on_request = true;
  vulkan::VulkanBackend vk(options, test);
  const Plan* plans[1] = {&h.plan};
  Status s = vk.Prepare(plans, 1, h.Binding());
  if (!s.ok() && std::strstr(s.message(), "no Vulkan") != nullptr) {
    c.skipped = true;
    return c;
  }
  DeviceSampling top_k;
  top_k.top_k = 8;
  top_k.uniform = 0.25;
  top_k.top_p = 0.9f;  // the filters too
  top_k.min_p = 0.05f;
  int32_t token = -1;
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok()) return c;
  int32_t ids[4] = {3, 7, 11, 49};
  std::memcpy(h.Data(h.plan.tokens_tensor), ids, sizeof(ids));
  EXPECT_TRUE(vk.Execute(0, {4, 0}).ok());  // the first submit may set things up in the driver
  EXPECT_TRUE(vk.SampleOnDevice(0, 0, DeviceSampling{}, &token).ok());
  EXPECT_TRUE(vk.SampleOnDevice(0, 0, top_k, &token).ok());
  c.before = vulkan::Snapshot(vk.counters());
  if (counter::Available()) counter::Start();
  for (int32_t position = 4; position < 40; ++position) {
    Status step = vk.Execute(0, {position % 3 + 1, position});
    EXPECT_TRUE(step.ok()) << step.message();
    EXPECT_TRUE(vk.SampleOnDevice(0, 0, position % 2 ? top_k : DeviceSampling{}, &token).ok());
    EXPECT_TRUE(vk.FetchLogits(0, 0, 1).ok());
  }
  if (counter::Available()) counter::Stop();
  c.after = vulkan::Snapshot(vk.counters());
  c.validation_messages = vk.validation_messages();
  c.heap_events = counter::Events();
  c.driver_heap_events = counter::DriverEvents();
  c.threads = counter::ThreadsCreated();
  if (c.heap_events != 0) {
    static char where[16384];
    counter::DescribeFirstEvent(where, sizeof(where));
    c.first_heap_event = where;
  }
  return c;
}

TEST(VulkanNoAllocTest, StepsCreateNoVulkanObjects) {
  StepCounts c = CountSteps(/*validation=*/true);
  if (c.skipped) GTEST_SKIP() << "no Vulkan device";
  EXPECT_EQ(c.after.object_creations, c.before.object_creations);
  EXPECT_EQ(c.after.memory_allocations, c.before.memory_allocations);
  EXPECT_EQ(c.after.descriptor_updates, c.before.descriptor_updates);
  EXPECT_EQ(c.validation_messages, 0u);
  std::printf("driver host allocations through our callbacks during 36 steps: %llu\n",
              static_cast<unsigned long long>(c.after.driver_host_allocations -
                                              c.before.driver_host_allocations));
}

// Without the validation layer (which allocates on every call it checks).
TEST(VulkanNoAllocTest, StepsMakeNoHeapAllocationInStaticlm) {
  if (!counter::Available()) {
    GTEST_SKIP() << "sanitizer build: ASan interposes malloc itself, so counting is disabled";
  }
  StepCounts c = CountSteps(/*validation=*/false);
  if (c.skipped) GTEST_SKIP() << "no Vulkan device";
  EXPECT_EQ(c.after.object_creations, c.before.object_creations);
  EXPECT_EQ(c.threads, 0u);
  EXPECT_EQ(c.heap_events, 0u) << "staticlm's first heap event:\n" << c.first_heap_event;
  std::printf("heap events during 36 steps: staticlm %llu, inside the Vulkan driver %llu\n",
              static_cast<unsigned long long>(c.heap_events),
              static_cast<unsigned long long>(c.driver_heap_events));
}

#else
TEST(VulkanNoAllocTest, Skipped) {
  GTEST_SKIP() << "built without Vulkan (STATICLM_VULKAN=OFF)";
}
#endif

}  // namespace
}  // namespace staticlm::vktest
