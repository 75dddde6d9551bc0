// Every Vulkan kernel against the CPU reference kernels (the oracle), one op per plan, on
// random inputs of awkward sizes, with both matmul styles (column per invocation and the
// subgroup-reduced GPU form) and with the Khronos validation layer on: any validation message
// fails the test. Ring caches are driven to positions far past max_context (there is no RoPE
// table: each step's angles are the rows'), and batched plans (a sequence per row, each at its
// own position) run every cache policy. Skips when this build or machine has no Vulkan device.
// The plain one-op comparisons every backend shares (embedding of every weight type, scaled or
// not, the bias add, RoPE with frequency factors and an attention factor, GELU gating with
// saturating values, rows past the step left alone) are in backend_ops_test; what stays here is
// Vulkan's own: matmul styles and bindings, shader choices, the loop budget, validation.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "tests/vulkan_test_support.h"
#if defined(STATICLM_HAVE_VULKAN)
#include "backends/vulkan/vk_dispatch.h"
#include "backends/vulkan/vulkan_backend.h"
#include "tests/support/sanitizer_build.h"
#include "tests/vulkan_compare.h"
#endif

namespace staticlm::vktest {
namespace {

#if defined(STATICLM_HAVE_VULKAN)

using staticlm::test::SweepCases;
using staticlm::test::SweepRuns;

const DType kWeightTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16,
                              DType::kQ4_0, DType::kQ4_1, DType::kQ8_0};

// y = x · wᵀ for every weight type and every style, decode (one row) and a partial prefill
// tile (n_tokens < chunk). Style 2 reads two-block units for Q4_0 and Q8_0, so 5 blocks a row
// fall back to style 0; so does a weight at the very start of the buffer (no binding offset a
// whole number of units before it) and a float weight not 16-byte aligned (its 64- or 128-byte
// units are whole uvec4s). The harness puts weights 4 bytes past a 64-byte boundary;
// `aligned` moves this one to the boundary + 16.
TEST(VulkanKernelsTest, MatMulEveryTypeEveryStyle) {
  struct Case {
    int style;
    int64_t n_in;
    int32_t chunk, n_tokens;
    bool room_before;  // another weight first, so the binding can start before this one
    bool aligned;
  };
  const Case cases[] = {{0, 160, 11, 9, false, false}, {1, 160, 11, 9, false, false},
                        {0, 192, 1, 1, true, true},    {2, 160, 11, 9, true, true},
                        {2, 192, 11, 9, true, true},   {2, 192, 1, 1, true, true},
                        {2, 192, 1, 1, true, false},   {2, 192, 1, 1, false, false}};
  for (const Case& c : cases) {
    for (DType type : kWeightTypes) {
      SCOPED_TRACE(std::string(DTypeName(type)) + " style " + std::to_string(c.style) + " n_in " +
                   std::to_string(c.n_in) + " chunk " + std::to_string(c.chunk) +
                   (c.room_before ? " room" : "") + (c.aligned ? " aligned" : ""));
      const int64_t n_out = 67;
      PlanHarness h(c.chunk);
      uint32_t x = h.Tensor(BufferId::kArena, DType::kF32, {c.chunk, c.n_in}, "x");
      if (c.room_before) h.Tensor(BufferId::kWeights, DType::kF32, {64}, "room");
      uint32_t w = h.Tensor(BufferId::kWeights, type, {n_out, c.n_in}, "w");
      if (c.aligned) {
        TensorRegion& t = h.plan.tensors[w];
        t.offset += 12;
        h.plan.buffer_bytes[static_cast<int>(BufferId::kWeights)] = t.offset + t.bytes();
      }
      uint32_t y = h.Tensor(BufferId::kArena, DType::kF32, {c.chunk, n_out}, "y");
      h.AddOp(OpKind::kMatMul, {x, w}, {y}, OpParams{});
      h.Allocate();
      const bool pairs = type == DType::kQ4_0 || type == DType::kQ8_0;
      const bool floats = type == DType::kF32 || type == DType::kF16 || type == DType::kBF16;
      const bool units = c.style == 2 && c.room_before && c.n_in % (pairs ? 64 : 32) == 0 &&
                         (c.aligned || !floats);
      const std::string shader = FirstShader(h, c.style, "matmul_");
      const int expect_style = c.style == 2 ? (units ? 2 : 0) : c.style;
      EXPECT_NE(shader.find("_s" + std::to_string(expect_style) + "_r"), std::string::npos)
          << shader;
      EXPECT_NE(shader.find(c.chunk == 1 ? "_r1" : "_r8"), std::string::npos) << shader;
      auto wb = RandomWeights(type, n_out * c.n_in, 2);
      std::memcpy(h.Data(w), wb.data(), wb.size());
      PutFloats(h, x, RandomFloats(c.chunk * c.n_in, 3));
      RUN_OR_SKIP(r, h, {{c.n_tokens, 0}}, c.style);
      ExpectClose(Values(h, r.cpu, y, c.n_tokens), Values(h, r.gpu, y, c.n_tokens), 1e-4f, "y");
    }
  }
}

// The binding offset for a tensor indexed in units: a multiple of the device's alignment, a
// whole number of units before the tensor, as close to it as possible; none when the buffer
// starts too late.
TEST(VulkanKernelsTest, UnitBindingOffset) {
  uint64_t at = 1;
  ASSERT_TRUE(vulkan::UnitBindingOffset(4096, 16, 4, &at));
  EXPECT_EQ(at, 4096u);
  ASSERT_TRUE(vulkan::UnitBindingOffset(4100, 16, 4, &at));
  EXPECT_EQ(at, 4096u);
  EXPECT_FALSE(vulkan::UnitBindingOffset(4100, 16, 16, &at));  // never a whole uvec4 before
  ASSERT_TRUE(vulkan::UnitBindingOffset(4100, 16, 20, &at));
  EXPECT_EQ(at, 4080u);
  EXPECT_FALSE(vulkan::UnitBindingOffset(4, 16, 68, &at));  // the buffer starts too late
  for (uint64_t unit : {20u, 36u, 68u, 64u, 128u}) {
    for (uint64_t align : {4u, 16u, 64u, 256u}) {
      for (uint64_t offset = 0; offset < 2048; offset += 4) {
        bool found = vulkan::UnitBindingOffset(offset, align, unit, &at);
        // The answer by brute force: the largest fitting candidate.
        bool exists = false;
        uint64_t best = 0;
        for (uint64_t c = 0; c <= offset; c += align) {
          if ((offset - c) % unit == 0) {
            exists = true;
            best = c;
          }
        }
        ASSERT_EQ(found, exists) << offset << " " << align << " " << unit;
        if (found) {
          ASSERT_EQ(at, best) << offset << " " << align << " " << unit;
        }
      }
    }
  }
}

// The fused forms the engine's plans use: RMSNorm + gate/up + SiLU, Q/K/V with three
// widths, and the residual accumulation; plus gate/up of two different types (the fallback).
TEST(VulkanKernelsTest, MatMulFusedForms) {
  for (int style : {0, 1, 2}) {
    for (DType up_type : {DType::kQ4_1, DType::kQ8_0}) {
      SCOPED_TRACE("style " + std::to_string(style) + " up " + DTypeName(up_type));
      const int64_t n_in = 96, chunk = 6, ffn = 70;
      PlanHarness h(chunk);
      uint32_t x = h.Tensor(BufferId::kArena, DType::kF32, {chunk, n_in}, "x");
      // Room before the first weight, so style 2's bindings can start a whole unit before it.
      if (style == 2) h.Tensor(BufferId::kWeights, DType::kF32, {64}, "room");
      uint32_t g = h.Tensor(BufferId::kWeights, DType::kQ4_1, {ffn, n_in}, "gate");
      uint32_t u = h.Tensor(BufferId::kWeights, up_type, {ffn, n_in}, "up");
      uint32_t nw = h.Tensor(BufferId::kWeights, DType::kF32, {n_in}, "norm");
      uint32_t y0 = h.Tensor(BufferId::kArena, DType::kF32, {chunk, ffn}, "y0");
      uint32_t y1 = h.Tensor(BufferId::kArena, DType::kF32, {chunk, ffn}, "y1");
      uint32_t xn = h.Tensor(BufferId::kArena, DType::kF32, {chunk, n_in}, "xn");
      OpParams p;
      p.n_weights = 2;
      p.norm_input = true;
      p.silu_mul = true;
      p.eps = 1e-5f;
      h.AddOp(OpKind::kMatMul, {x, g, u, nw}, {y0, y1, xn}, p);
      // Q, K, V of different widths sharing x, then the output projection accumulated.
      uint32_t wq = h.Tensor(BufferId::kWeights, DType::kQ8_0, {64, n_in}, "wq");
      uint32_t wk = h.Tensor(BufferId::kWeights, DType::kQ4_0, {32, n_in}, "wk");
      uint32_t wv = h.Tensor(BufferId::kWeights, DType::kF16, {32, n_in}, "wv");
      uint32_t q = h.Tensor(BufferId::kArena, DType::kF32, {chunk, 64}, "q");
      uint32_t k = h.Tensor(BufferId::kArena, DType::kF32, {chunk, 32}, "k");
      uint32_t v = h.Tensor(BufferId::kArena, DType::kF32, {chunk, 32}, "v");
      OpParams p3;
      p3.n_weights = 3;
      h.AddOp(OpKind::kMatMul, {xn, wq, wk, wv}, {q, k, v}, p3);
      uint32_t wo = h.Tensor(BufferId::kWeights, DType::kQ4_1, {n_in, 64}, "wo");
      uint32_t o = h.Tensor(BufferId::kArena, DType::kF32, {chunk, n_in}, "o");
      OpParams pa;
      pa.accumulate = true;
      h.AddOp(OpKind::kMatMul, {q, wo}, {o, x}, pa);
      h.Allocate();
      uint32_t seed = 10;
      for (uint32_t t : {g, u, wq, wk, wv, wo}) {
        const TensorRegion& tr = h.plan.tensors[t];
        auto b = RandomWeights(tr.dtype, uint64_t(tr.elements()), seed++);
        std::memcpy(h.Data(t), b.data(), b.size());
      }
      PutFloats(h, nw, RandomFloats(n_in, 20));
      PutFloats(h, x, RandomFloats(chunk * n_in, 21));
      RUN_OR_SKIP(r, h, {{5, 0}}, style);
      for (uint32_t t : {y0, y1, xn, q, k, v, o, x}) {
        ExpectClose(Values(h, r.cpu, t, 5), Values(h, r.gpu, t, 5), 1e-4f, h.plan.tensors[t].name);
      }
    }
  }
}

TEST(VulkanKernelsTest, RmsNormRopeAddSiluTakeLast) {
  const int64_t chunk = 7, width = 166;  // RoPE below treats it as one head of 166
  PlanHarness h(chunk, 2048);
  uint32_t x = h.Tensor(BufferId::kArena, DType::kF32, {chunk, width}, "x");
  uint32_t w = h.Tensor(BufferId::kWeights, DType::kF32, {width}, "w");
  uint32_t y = h.Tensor(BufferId::kArena, DType::kF32, {chunk, width}, "y");
  uint32_t b = h.Tensor(BufferId::kArena, DType::kF32, {chunk, width}, "b");
  uint32_t last = h.Tensor(BufferId::kArena, DType::kF32, {1, width}, "last");
  OpParams pn;
  pn.eps = 1e-6f;
  h.AddOp(OpKind::kRmsNorm, {x, w}, {y}, pn);
  OpParams pr;
  pr.head_dim = 166;  // one head of an awkward (even) size
  pr.rope_base = 10000.0f;
  h.AddOp(OpKind::kRope, {}, {y}, pr);
  h.AddOp(OpKind::kAdd, {b}, {y}, OpParams{});
  h.AddOp(OpKind::kSiluMul, {x}, {y}, OpParams{});
  h.AddOp(OpKind::kTakeLast, {y}, {last}, OpParams{});
  h.Allocate();
  PutFloats(h, x, RandomFloats(chunk * width, 30, 3.0f));
  PutFloats(h, w, RandomFloats(width, 31));
  PutFloats(h, b, RandomFloats(chunk * width, 32));
  RUN_OR_SKIP(r, h, {{6, 1500}});
  ExpectClose(Values(h, r.cpu, y, 6), Values(h, r.gpu, y, 6), 1e-5f, "y");
  ExpectClose(Values(h, r.cpu, last), Values(h, r.gpu, last), 1e-5f, "last");
}

// RoPE on the queries then the keys (different head counts, same rows): one dispatch for
// both, each tensor rotated exactly as the CPU does.
TEST(VulkanKernelsTest, RopeOfQueriesAndKeysInOneDispatch) {
  const int64_t chunk = 5, hd = 10;
  PlanHarness h(chunk, 2048);
  uint32_t q = h.Tensor(BufferId::kArena, DType::kF32, {chunk, 3 * hd}, "q");
  uint32_t k = h.Tensor(BufferId::kArena, DType::kF32, {chunk, hd}, "k");
  OpParams pr;
  pr.head_dim = hd;
  pr.rope_base = 10000.0f;
  h.AddOp(OpKind::kRope, {}, {q}, pr);
  h.AddOp(OpKind::kRope, {}, {k}, pr);
  h.Allocate();
  vulkan::RopeRows rope;
  rope.AddPlan(h.plan, h.bytes[static_cast<int>(BufferId::kWeights)].data());
  std::vector<vulkan::Dispatch> dispatches;
  uint64_t scratch = 0;
  ASSERT_TRUE(
      vulkan::TranslatePlan(h.plan, rope, vulkan::DispatchOptions{}, &dispatches, &scratch).ok());
  ASSERT_EQ(dispatches.size(), 1u);
  EXPECT_STREQ(dispatches[0].shader, "rope");
  PutFloats(h, q, RandomFloats(chunk * 3 * hd, 40, 2.0f));
  PutFloats(h, k, RandomFloats(chunk * hd, 41, 2.0f));
  RUN_OR_SKIP(r, h, {{4, 1500}});
  ExpectClose(Values(h, r.cpu, q, 4), Values(h, r.gpu, q, 4), 0.0f, "q");
  ExpectClose(Values(h, r.cpu, k, 4), Values(h, r.gpu, k, 4), 0.0f, "k");
}

// KV store then attention over a static cache, prefill then decode far into the cache, for
// f16 and f32 caches and head sizes 64 and 96 (the 128-wide shader variant).
TEST(VulkanKernelsTest, KvStoreAndAttention) {
  for (DType kv : {DType::kF16, DType::kF32}) {
    for (int32_t hd : {64, 96}) {
      SCOPED_TRACE(std::string(DTypeName(kv)) + " hd " + std::to_string(hd));
      const int32_t chunk = 9, heads = 6, kv_heads = 2, capacity = 300;
      PlanHarness h(chunk, capacity);
      uint32_t q = h.Tensor(BufferId::kArena, DType::kF32, {chunk, heads * hd}, "q");
      uint32_t k = h.Tensor(BufferId::kArena, DType::kF32, {chunk, kv_heads * hd}, "k");
      uint32_t v = h.Tensor(BufferId::kArena, DType::kF32, {chunk, kv_heads * hd}, "v");
      uint32_t kc = h.Tensor(BufferId::kKvCache, kv, {kv_heads, capacity, hd}, "k cache");
      uint32_t vc = h.Tensor(BufferId::kKvCache, kv, {kv_heads, capacity, hd}, "v cache");
      uint32_t sc = h.Tensor(BufferId::kArena, DType::kF32, {heads, capacity}, "scores");
      uint32_t o = h.Tensor(BufferId::kArena, DType::kF32, {chunk, heads * hd}, "o");
      OpParams p;
      p.n_heads = heads;
      p.n_kv_heads = kv_heads;
      p.head_dim = hd;
      p.scale = 1.0f / std::sqrt(float(hd));
      p.rope_base = 10000.0f;
      p.cache_slots = capacity;
      h.AddOp(OpKind::kKvStore, {k, v}, {kc, vc}, p);
      h.AddOp(OpKind::kAttention, {q, kc, vc, sc}, {o}, p);
      h.Allocate();
      PutFloats(h, q, RandomFloats(chunk * heads * hd, 40));
      PutFloats(h, k, RandomFloats(chunk * kv_heads * hd, 41));
      PutFloats(h, v, RandomFloats(chunk * kv_heads * hd, 42));
      // Fill the whole cache so that decode far in reads many filled slots.
      auto fill = RandomFloats(size_t(2 * kv_heads * capacity * hd), 43);
      uint8_t* cache = h.bytes[int(BufferId::kKvCache)].data();
      for (size_t i = 0; i < fill.size(); ++i) {
        if (kv == DType::kF16) {
          uint16_t bits = cpu::FloatToHalf(fill[i]);
          std::memcpy(cache + 2 * i, &bits, 2);
        } else {
          std::memcpy(cache + 4 * i, &fill[i], 4);
        }
      }
      RUN_OR_SKIP(r, h, {{7, 0}, {9, 7}, {1, 280}, {3, 297}});
      ExpectClose(Values(h, r.cpu, kc), Values(h, r.gpu, kc), 1e-6f, "k cache");
      ExpectClose(Values(h, r.cpu, vc), Values(h, r.gpu, vc), 1e-6f, "v cache");
      ExpectClose(Values(h, r.cpu, o, 3), Values(h, r.gpu, o, 3), 2e-5f, "attention");
    }
  }
}

// One layer's cache of any policy and type: KV store then attention, step after step, with
// the attention output compared after every step and the caches at the end.
struct CacheCase {
  DType kv = DType::kF16;  // F16 or F32 (kv_quant none); ignored for q8
  KvQuant quant = KvQuant::kNone;
  CachePolicy policy = CachePolicy::kStatic;
  int32_t window = 0, sinks = 0, hd = 64, chunk = 9, max_context = 304;
  int32_t group = 8;  // q4's kv_group
  int32_t heads = 6, kv_heads = 2;
  int style = 0;  // 1: the GPU forms (matmul by subgroups, tiled attention workgroups of 64)
  bool force_tiled = false;    // prefill on the tiled kernel whatever the dispatcher would choose
  uint32_t splits_budget = 0;  // DispatchOptions::attention_splits_budget unless 0 (1: few splits)
  // The RoPE the queries and keys get first: rotate-half (Gemma) or adjacent pairs, and base.
  bool rope_halves = false;
  float rope_base = 10000.0f;
  // Sequences the cache holds; rows_are_sequences: a batched plan (chunk = batch, a row per
  // sequence), else steps go to StepParams::sequence's part.
  int32_t batch = 1;
  bool rows_are_sequences = false;
  std::vector<StepParams> steps;
};

// q8 codes may differ by one where x · (1/scale) lands on a rounding boundary and the device's
// division rounds differently; scales must agree to an ulp or so.
void ExpectQ8Close(const PlanHarness& h, const RunResult& cpu, const RunResult& gpu, uint32_t codes,
                   uint32_t scales) {
  const TensorRegion& c = h.plan.tensors[codes];
  const int8_t* a = reinterpret_cast<const int8_t*>(cpu.bytes[int(c.buffer)].data() + c.offset);
  const int8_t* b = reinterpret_cast<const int8_t*>(gpu.bytes[int(c.buffer)].data() + c.offset);
  int64_t off_by_one = 0;
  for (int64_t i = 0; i < c.elements(); ++i) {
    ASSERT_LE(std::abs(int(a[i]) - int(b[i])), 1) << c.name << "[" << i << "]";
    off_by_one += a[i] != b[i];
  }
  EXPECT_LE(off_by_one, c.elements() / 200) << c.name << ": too many codes off by one";
  if (off_by_one > 0) std::printf("%s: %lld codes off by one\n", c.name, (long long)off_by_one);
  ExpectClose(Values(h, cpu, scales), Values(h, gpu, scales), 1e-6f, h.plan.tensors[scales].name);
}

// q4's nibbles, by the same rule.
void ExpectQ4CodesClose(const PlanHarness& h, const RunResult& cpu, const RunResult& gpu,
                        uint32_t codes) {
  const TensorRegion& c = h.plan.tensors[codes];
  const uint8_t* a = cpu.bytes[int(c.buffer)].data() + c.offset;
  const uint8_t* b = gpu.bytes[int(c.buffer)].data() + c.offset;
  int64_t off_by_one = 0;
  for (int64_t i = 0; i < c.elements(); ++i) {
    int x = i % 2 == 0 ? a[i / 2] & 15 : a[i / 2] >> 4;
    int y = i % 2 == 0 ? b[i / 2] & 15 : b[i / 2] >> 4;
    ASSERT_LE(std::abs(x - y), 1) << c.name << "[" << i << "]";
    off_by_one += x != y;
  }
  EXPECT_LE(off_by_one, c.elements() / 200) << c.name << ": too many codes off by one";
  if (off_by_one > 0) std::printf("%s: %lld codes off by one\n", c.name, (long long)off_by_one);
}

void RunCacheCase(const CacheCase& cc) {
  const int32_t chunk = cc.rows_are_sequences ? cc.batch : cc.chunk;
  const int32_t heads = cc.heads, kv_heads = cc.kv_heads;
  const int32_t hd = cc.hd, per_sequence = cc.rows_are_sequences ? 1 : chunk;
  const bool q8 = cc.quant == KvQuant::kQ8, q4 = cc.quant == KvQuant::kQ4;
  int32_t slots = cc.policy == CachePolicy::kStatic ? cc.max_context : cc.window + per_sequence - 1;
  if (q4) slots = (slots + cc.group - 1) / cc.group * cc.group;  // whole groups
  const int32_t recent = cc.group + per_sequence - 1;
  const int32_t cache_heads = cc.batch * kv_heads;  // every sequence's part
  const int32_t score_rows = cc.rows_are_sequences ? cc.batch * heads : heads;
  PlanHarness h(chunk, cc.max_context);
  h.plan.limits.window = cc.window;
  h.plan.limits.sinks = cc.sinks;
  h.plan.limits.max_batch = cc.batch;
  h.plan.limits.rows_are_sequences = cc.rows_are_sequences;
  const DType type = q8 ? kDTypeI8 : (q4 ? kDTypeKvQ4 : cc.kv);
  h.plan.limits.kv_dtype = type;
  uint32_t q = h.Tensor(BufferId::kArena, DType::kF32, {chunk, heads * hd}, "q");
  uint32_t k = h.Tensor(BufferId::kArena, DType::kF32, {chunk, kv_heads * hd}, "k");
  uint32_t v = h.Tensor(BufferId::kArena, DType::kF32, {chunk, kv_heads * hd}, "v");
  uint32_t kc = h.Tensor(BufferId::kKvCache, type, {cache_heads, slots, hd}, "k cache");
  uint32_t vc = h.Tensor(BufferId::kKvCache, type, {cache_heads, slots, hd}, "v cache");
  uint32_t ks = 0, vs = 0, kr = 0, vr = 0;
  if (q8) {
    ks = h.Tensor(BufferId::kKvCache, DType::kF32, {cache_heads, slots}, "k scales");
    vs = h.Tensor(BufferId::kKvCache, DType::kF32, {cache_heads, slots}, "v scales");
  }
  if (q4) {
    ks = h.Tensor(BufferId::kKvCache, DType::kF32, {cache_heads, slots / cc.group, 2, hd},
                  "k params");
    vs = h.Tensor(BufferId::kKvCache, DType::kF32, {cache_heads, slots, 2}, "v params");
    kr = h.Tensor(BufferId::kKvCache, DType::kF32, {cache_heads, recent, hd}, "k recent");
    vr = h.Tensor(BufferId::kKvCache, DType::kF32, {cache_heads, recent, hd}, "v recent");
  }
  uint32_t sc = h.Tensor(BufferId::kArena, DType::kF32, {score_rows, slots}, "scores");
  uint32_t o = h.Tensor(BufferId::kArena, DType::kF32, {chunk, heads * hd}, "o");
  OpParams p;
  p.n_heads = heads;
  p.n_kv_heads = kv_heads;
  p.head_dim = hd;
  p.scale = 1.0f / std::sqrt(float(hd));
  p.rope_base = cc.rope_base;
  p.cache_slots = slots;
  p.cache_policy = cc.policy;
  p.kv_quant = cc.quant;
  p.window = cc.window;
  p.sinks = cc.sinks;
  OpParams rope;
  rope.head_dim = hd;
  rope.rope_base = p.rope_base;
  rope.rope_halves = cc.rope_halves;
  h.AddOp(OpKind::kRope, {}, {q}, rope);
  h.AddOp(OpKind::kRope, {}, {k}, rope);
  if (q4) {
    p.kv_group = cc.group;
    p.recent_slots = recent;
    h.AddOp(OpKind::kKvStore, {k, v}, {kc, vc, ks, vs, kr, vr}, p);
    h.AddOp(OpKind::kAttention, {q, kc, vc, sc, ks, vs, kr, vr}, {o}, p);
  } else if (q8) {
    h.AddOp(OpKind::kKvStore, {k, v}, {kc, vc, ks, vs}, p);
    h.AddOp(OpKind::kAttention, {q, kc, vc, sc, ks, vs}, {o}, p);
  } else {
    h.AddOp(OpKind::kKvStore, {k, v}, {kc, vc}, p);
    h.AddOp(OpKind::kAttention, {q, kc, vc, sc}, {o}, p);
  }
  h.Allocate();
  // Prefill plans (rows of one sequence) run the tiled kernel where its loops fit llvmpipe's
  // budget (vk_loop_budget.h), decode and batched plans the split one.
  const int hd_variant = hd <= 64 ? 64 : (hd <= 128 ? 128 : 256);
  vulkan::AttentionLoopShape shape{hd_variant, q8, uint64_t(cc.sinks)};
  const uint64_t group = cc.style == 1 ? 64 : 128;
  const bool tiled_fits = vulkan::TiledLoopIterations(shape, uint64_t(slots), group) <=
                          vulkan::kLlvmpipeLoopBudget * 15 / 16;
  const bool tiled = chunk > 1 && !cc.rows_are_sequences && (tiled_fits || cc.force_tiled);
  const std::string shader = FirstShader(h, cc.style, "attention_", cc.force_tiled);
  EXPECT_EQ(shader.rfind(tiled ? "attention_tiled_" : "attention_split_", 0), 0u) << shader;
  if (tiled) {
    EXPECT_EQ(shader.substr(shader.size() - 4), cc.style == 1 ? "_w64" : "w128");
  }
  PutFloats(h, q, RandomFloats(chunk * heads * hd, 50));
  PutFloats(h, k, RandomFloats(chunk * kv_heads * hd, 51));
  PutFloats(h, v, RandomFloats(chunk * kv_heads * hd, 52));
  // Random bytes everywhere in the cache: a slot read before it is written shows.
  std::mt19937 rng(53);
  for (uint8_t& byte : h.bytes[int(BufferId::kKvCache)]) byte = uint8_t(rng() % 61);
  RUN_OR_SKIP(r, h, cc.steps, cc.style, 0, cc.force_tiled, cc.splits_budget);
  ASSERT_EQ(r.cpu.arena_after_step.size(), cc.steps.size());
  for (size_t i = 0; i < cc.steps.size(); ++i) {
    const StepParams& step = cc.steps[i];
    SCOPED_TRACE("step " + std::to_string(i) + " at position " +
                 std::to_string(step.row_positions ? step.row_positions[0] : step.position));
    RunResult cpu_step, gpu_step;
    cpu_step.bytes[int(BufferId::kArena)] = r.cpu.arena_after_step[i];
    gpu_step.bytes[int(BufferId::kArena)] = r.gpu.arena_after_step[i];
    // The rotation is the CPU's bit for bit (angles in double on the host, no FMA).
    ExpectClose(Values(h, cpu_step, q, step.n_tokens), Values(h, gpu_step, q, step.n_tokens), 0.0f,
                "rotated q");
    ExpectClose(Values(h, cpu_step, k, step.n_tokens), Values(h, gpu_step, k, step.n_tokens), 0.0f,
                "rotated k");
    ExpectClose(Values(h, cpu_step, o, cc.steps[i].n_tokens),
                Values(h, gpu_step, o, cc.steps[i].n_tokens), q4 ? 1e-3f : (q8 ? 1e-4f : 2e-5f),
                "attention");
  }
  if (q8) {
    ExpectQ8Close(h, r.cpu, r.gpu, kc, ks);
    ExpectQ8Close(h, r.cpu, r.gpu, vc, vs);
  } else if (q4) {
    ExpectQ4CodesClose(h, r.cpu, r.gpu, kc);
    ExpectQ4CodesClose(h, r.cpu, r.gpu, vc);
    for (uint32_t t : {ks, vs, kr, vr}) {
      ExpectClose(Values(h, r.cpu, t), Values(h, r.gpu, t), 1e-6f, h.plan.tensors[t].name);
    }
  } else {
    ExpectClose(Values(h, r.cpu, kc), Values(h, r.gpu, kc), 1e-6f, "k cache");
    ExpectClose(Values(h, r.cpu, vc), Values(h, r.gpu, vc), 1e-6f, "v cache");
  }
}

// Steps that fill a ring of window + chunk − 1 slots several times over, with chunks of every
// size, ending far from the start.
std::vector<StepParams> RingSteps() {
  return {{7, 0}, {9, 7}, {1, 16}, {9, 17}, {5, 26}, {9, 31}, {1, 40}, {8, 41}, {3, 49}, {1, 52}};
}

TEST(VulkanKernelsTest, SlidingWindowCache) {
  for (DType kv : {DType::kF16, DType::kF32}) {
    for (int32_t hd : {64, 96}) {
      SCOPED_TRACE(std::string(DTypeName(kv)) + " hd " + std::to_string(hd));
      CacheCase cc;
      cc.kv = kv;
      cc.hd = hd;
      cc.policy = CachePolicy::kSlidingWindow;
      cc.window = 13;
      cc.steps = RingSteps();
      RunCacheCase(cc);
    }
  }
}

TEST(VulkanKernelsTest, SinkCache) {
  for (DType kv : {DType::kF16, DType::kF32}) {
    for (int32_t hd : {64, 96}) {
      SCOPED_TRACE(std::string(DTypeName(kv)) + " hd " + std::to_string(hd));
      CacheCase cc;
      cc.kv = kv;
      cc.hd = hd;
      cc.policy = CachePolicy::kSink;
      cc.window = 14;
      cc.sinks = 3;
      cc.steps = RingSteps();
      RunCacheCase(cc);
    }
  }
}

// q8 (Hadamard-rotated int8) over each policy, head sizes 64 and 128 (both shader variants).
TEST(VulkanKernelsTest, Q8CacheEveryPolicy) {
  for (CachePolicy policy :
       {CachePolicy::kStatic, CachePolicy::kSlidingWindow, CachePolicy::kSink}) {
    for (int32_t hd : {64, 128}) {
      SCOPED_TRACE(std::string(CachePolicyName(policy)) + " hd " + std::to_string(hd));
      CacheCase cc;
      cc.quant = KvQuant::kQ8;
      cc.hd = hd;
      cc.policy = policy;
      cc.window = policy == CachePolicy::kStatic ? 0 : 14;
      cc.sinks = policy == CachePolicy::kSink ? 2 : 0;
      cc.steps = policy == CachePolicy::kStatic
                     ? std::vector<StepParams>{{7, 0}, {9, 7}, {1, 280}, {3, 297}}
                     : RingSteps();
      RunCacheCase(cc);
    }
  }
}

// q4 (KIVI) over a static cache and a sliding window, groups of 8 completed inside chunks,
// across them and by single decode steps; head sizes 64 and 96.
TEST(VulkanKernelsTest, Q4Cache) {
  for (CachePolicy policy : {CachePolicy::kStatic, CachePolicy::kSlidingWindow}) {
    for (int32_t hd : {64, 96}) {
      SCOPED_TRACE(std::string(CachePolicyName(policy)) + " hd " + std::to_string(hd));
      CacheCase cc;
      cc.quant = KvQuant::kQ4;
      cc.hd = hd;
      cc.policy = policy;
      cc.window = policy == CachePolicy::kStatic ? 0 : 15;
      cc.steps = policy == CachePolicy::kStatic
                     ? std::vector<StepParams>{{7, 0}, {9, 7}, {1, 16}, {1, 17}, {9, 18}, {5, 27}}
                     : RingSteps();
      RunCacheCase(cc);
    }
  }
}

// The ring steps moved to `base`: positions far past max_context (304), where a RoPE table of
// max_context rows would have ended.
std::vector<StepParams> FarRingSteps(int32_t base) {
  std::vector<StepParams> steps = RingSteps();
  for (StepParams& s : steps) s.position += base;
  return steps;
}

TEST(VulkanKernelsTest, RingCachesPastMaxContext) {
  for (int32_t base : {1000000, 2147480000}) {
    for (CachePolicy policy : {CachePolicy::kSlidingWindow, CachePolicy::kSink}) {
      SCOPED_TRACE(std::string(CachePolicyName(policy)) + " from " + std::to_string(base));
      CacheCase cc;
      cc.policy = policy;
      cc.window = 14;
      cc.sinks = policy == CachePolicy::kSink ? 3 : 0;
      cc.steps = FarRingSteps(base);
      RunCacheCase(cc);
    }
  }
  CacheCase q8;
  q8.quant = KvQuant::kQ8;
  q8.policy = CachePolicy::kSink;
  q8.window = 14;
  q8.sinks = 2;
  q8.steps = FarRingSteps(1000000);
  RunCacheCase(q8);
  CacheCase q4;
  q4.quant = KvQuant::kQ4;
  q4.policy = CachePolicy::kSlidingWindow;
  q4.window = 15;
  q4.steps = FarRingSteps(1000000);
  RunCacheCase(q4);
}

// A batched plan's steps: four sequences, each decoding one token a step at its own position
// (sequence 2 far past max_context when the cache is a ring), in an order that changes every
// step; sequence 3 joins at step 4 and sequence 1 leaves after step 20. The row arrays live in
// `storage`, reserved so that the steps' pointers stay valid.
std::vector<StepParams> BatchedSteps(bool ring, std::vector<int32_t>* storage) {
  const int kSteps = 30, kBatch = 4;
  storage->clear();
  storage->reserve(size_t(kSteps * kBatch * 2));
  int32_t next[kBatch] = {0, 5, ring ? 1000000 : 40, 17};
  std::vector<StepParams> steps;
  for (int step = 0; step < kSteps; ++step) {
    std::vector<int32_t> seqs;
    for (int k = 0; k < kBatch; ++k) {
      int s = (k + step) % kBatch;
      if (step % 3 == 1) s = kBatch - 1 - s;
      if ((s == 3 && step < 4) || (s == 1 && step > 20)) continue;
      seqs.push_back(s);
    }
    StepParams p;
    p.n_tokens = int32_t(seqs.size());
    p.row_sequences = storage->data() + storage->size();
    storage->insert(storage->end(), seqs.begin(), seqs.end());
    p.row_positions = storage->data() + storage->size();
    for (int32_t s : seqs) storage->push_back(next[s]++);
    steps.push_back(p);
  }
  return steps;
}

// Every policy and KV type with a batched plan: each row's RoPE angles, cache part and position.
TEST(VulkanKernelsTest, BatchedRowsEveryPolicy) {
  struct Mode {
    CachePolicy policy;
    KvQuant quant;
    DType kv;
  };
  const Mode modes[] = {{CachePolicy::kStatic, KvQuant::kNone, DType::kF16},
                        {CachePolicy::kSlidingWindow, KvQuant::kNone, DType::kF32},
                        {CachePolicy::kSink, KvQuant::kNone, DType::kF16},
                        {CachePolicy::kSink, KvQuant::kQ8, DType::kF16},
                        {CachePolicy::kStatic, KvQuant::kQ4, DType::kF16},
                        {CachePolicy::kSlidingWindow, KvQuant::kQ4, DType::kF16}};
  for (const Mode& m : modes) {
    SCOPED_TRACE(std::string(CachePolicyName(m.policy)) + " quant " + std::to_string(int(m.quant)));
    std::vector<int32_t> storage;
    CacheCase cc;
    cc.kv = m.kv;
    cc.quant = m.quant;
    cc.policy = m.policy;
    cc.window = m.policy == CachePolicy::kStatic ? 0 : 13;
    cc.sinks = m.policy == CachePolicy::kSink ? 3 : 0;
    cc.batch = 4;
    cc.rows_are_sequences = true;
    cc.steps = BatchedSteps(m.policy != CachePolicy::kStatic, &storage);
    RunCacheCase(cc);
  }
}

// A plan of one sequence's rows over a cache of four sequences (the engine's prefill plan when
// max_batch > 1): each step writes and reads only StepParams::sequence's part.
TEST(VulkanKernelsTest, OneSequenceStepsIntoItsPart) {
  for (KvQuant quant : {KvQuant::kNone, KvQuant::kQ8, KvQuant::kQ4}) {
    SCOPED_TRACE(int(quant));
    CacheCase cc;
    cc.quant = quant;
    cc.policy = CachePolicy::kSlidingWindow;
    cc.window = 15;
    cc.batch = 4;
    cc.steps = {{7, 0, 2},  {9, 0, 0},  {9, 7, 2},  {1, 9, 0}, {8, 16, 2},
                {9, 10, 0}, {3, 24, 2}, {5, 19, 0}, {7, 0, 3}, {1, 27, 2}};
    RunCacheCase(cc);
  }
}

// Prefill chunks through the tiled kernel, every policy × cache type, both workgroup sizes
// (CPU 128, GPU 64): chunks of 50 rows over tiles of 42 or 21 rows (6 query heads over 2 KV
// heads: WG / 3 rows), of 21 or 10 (6 over 1) and of 32 or 16 (4 over 4), steps of every length
// starting mid-cache, and rings driven far past max_context; the 2-sequence cache puts each
// chunk into its own sequence's part.
struct TiledMode {
  CachePolicy policy;
  KvQuant quant;
  DType kv;
};
const TiledMode kTiledModes[] = {
    {CachePolicy::kStatic, KvQuant::kNone, DType::kF32},
    {CachePolicy::kStatic, KvQuant::kNone, DType::kF16},
    {CachePolicy::kStatic, KvQuant::kQ8, DType::kF16},
    {CachePolicy::kStatic, KvQuant::kQ4, DType::kF16},
    {CachePolicy::kSlidingWindow, KvQuant::kNone, DType::kF32},
    {CachePolicy::kSlidingWindow, KvQuant::kNone, DType::kF16},
    {CachePolicy::kSlidingWindow, KvQuant::kQ8, DType::kF16},
    {CachePolicy::kSlidingWindow, KvQuant::kQ4, DType::kF16},
    {CachePolicy::kSink, KvQuant::kNone, DType::kF32},
    {CachePolicy::kSink, KvQuant::kNone, DType::kF16},
    {CachePolicy::kSink, KvQuant::kQ8, DType::kF16},
};

CacheCase TiledCase(const TiledMode& m, int32_t hd, int32_t heads, int32_t kv_heads) {
  CacheCase cc;
  cc.kv = m.kv;
  cc.quant = m.quant;
  cc.policy = m.policy;
  cc.hd = hd;
  cc.heads = heads;
  cc.kv_heads = kv_heads;
  cc.chunk = 50;
  cc.max_context = 400;
  cc.window = m.policy == CachePolicy::kStatic ? 0 : 37;
  cc.sinks = m.policy == CachePolicy::kSink ? 5 : 0;
  cc.batch = 2;
  cc.steps = {{50, 0, 1},   {23, 0, 0},  {1, 50, 1},  {49, 51, 1}, {22, 23, 0},
              {50, 100, 1}, {2, 150, 1}, {50, 45, 0}, {31, 152, 1}};
  return cc;
}

// The sanitizer build runs one style and head size per mode (tests/support/sanitizer_build.h).
TEST(VulkanKernelsTest, TiledPrefillEveryPolicyAndType) {
  size_t ran = 0;
  for (int style : {0, 1}) {
    for (size_t mode = 0; mode < std::size(kTiledModes); ++mode) {
      const TiledMode& m = kTiledModes[mode];
      // Head sizes: q8 a power of two, q4 a multiple of 8, else one not a multiple of 4.
      const int32_t awkward = m.quant == KvQuant::kQ8 ? 64 : (m.quant == KvQuant::kQ4 ? 96 : 66);
      for (int32_t hd : {awkward, 128}) {
        if (!SweepRuns(mode, size_t(style * 2 + (hd == 128)), 4)) continue;
        SCOPED_TRACE(std::string(CachePolicyName(m.policy)) + " quant " +
                     std::to_string(int(m.quant)) + " " + DTypeName(m.kv) + " hd " +
                     std::to_string(hd) + " style " + std::to_string(style));
        CacheCase cc = TiledCase(m, hd, 6, 2);
        cc.style = style;
        RunCacheCase(cc);
        ++ran;
      }
    }
  }
  EXPECT_EQ(ran, SweepCases(std::size(kTiledModes), 4));
}

TEST(VulkanKernelsTest, TiledPrefillHeadGroups) {
  size_t ran = 0;
  for (int style : {0, 1}) {
    for (size_t mode = 0; mode < std::size(kTiledModes); ++mode) {
      const TiledMode& m = kTiledModes[mode];
      for (auto [heads, kv_heads] : {std::pair{6, 1}, std::pair{4, 4}}) {
        if (!SweepRuns(mode, size_t(style * 2 + (heads == 4)), 4)) continue;
        SCOPED_TRACE(std::string(CachePolicyName(m.policy)) + " quant " +
                     std::to_string(int(m.quant)) + " heads " + std::to_string(heads) + "/" +
                     std::to_string(kv_heads) + " style " + std::to_string(style));
        CacheCase cc = TiledCase(m, 64, heads, kv_heads);
        cc.style = style;
        RunCacheCase(cc);
        ++ran;
      }
    }
  }
  EXPECT_EQ(ran, SweepCases(std::size(kTiledModes), 4));
}

TEST(VulkanKernelsTest, TiledPrefillRingsPastMaxContext) {
  for (int style : {0, 1}) {
    for (const TiledMode& m : kTiledModes) {
      if (m.policy == CachePolicy::kStatic) continue;
      SCOPED_TRACE(std::string(CachePolicyName(m.policy)) + " quant " +
                   std::to_string(int(m.quant)) + " style " + std::to_string(style));
      CacheCase cc = TiledCase(m, 64, 6, 2);
      cc.batch = 1;
      cc.style = style;
      cc.steps = {{50, 2000000}, {1, 2000050}, {50, 2000051}, {27, 2000101}, {50, 2000128}};
      RunCacheCase(cc);
    }
  }
}

// Gemma 3's op forms. Embeddings scaled by sqrt(d) after dequantization: one f32 product, so
// the rows are the CPU's bit for bit.
// RMSNorm of each head on its own (Gemma's q and k norms): four heads of 256 (the queries), one
// (the keys), and three of 40 (groups narrower than a workgroup); the step has fewer rows than
// the plan.
TEST(VulkanKernelsTest, RmsNormPerHead) {
  const int64_t chunk = 6;
  const int64_t shapes[][2] = {{4, 256}, {1, 256}, {3, 40}};  // heads, head size
  PlanHarness h(chunk);
  std::vector<uint32_t> outs, ins, weights;
  for (const auto& shape : shapes) {
    const int64_t width = shape[0] * shape[1];
    uint32_t x = h.Tensor(BufferId::kArena, DType::kF32, {chunk, width}, "x");
    uint32_t w = h.Tensor(BufferId::kWeights, DType::kF32, {shape[1]}, "w");
    uint32_t y = h.Tensor(BufferId::kArena, DType::kF32, {chunk, width}, "y");
    OpParams p;
    p.eps = 1e-6f;
    p.norm_group = static_cast<int32_t>(shape[1]);
    h.AddOp(OpKind::kRmsNorm, {x, w}, {y}, p);
    ins.push_back(x);
    weights.push_back(w);
    outs.push_back(y);
  }
  h.Allocate();
  uint32_t seed = 60;
  for (size_t i = 0; i < outs.size(); ++i) {
    const TensorRegion& x = h.plan.tensors[ins[i]];
    // Heads of very different magnitudes: a norm over the whole row would show.
    std::vector<float> values = RandomFloats(size_t(x.elements()), seed++, 2.0f);
    for (size_t j = 0; j < values.size(); j += size_t(shapes[i][1]) * 2) {
      for (int64_t e = 0; e < shapes[i][1] && j + size_t(e) < values.size(); ++e) {
        values[j + size_t(e)] *= 40.0f;
      }
    }
    PutFloats(h, ins[i], values);
    PutFloats(h, weights[i], RandomFloats(size_t(shapes[i][1]), seed++));
  }
  RUN_OR_SKIP(r, h, {{5, 0}});
  for (uint32_t y : outs) {
    ExpectClose(Values(h, r.cpu, y, 5), Values(h, r.gpu, y, 5), 1e-5f, "per-head norm");
  }
}

// The number of dispatches `h`'s plan translates to.
size_t DispatchCount(const PlanHarness& h) {
  vulkan::RopeRows rope;
  rope.AddPlan(h.plan, h.bytes[static_cast<int>(BufferId::kWeights)].data());
  std::vector<vulkan::Dispatch> dispatches;
  uint64_t scratch = 0;
  Status s = vulkan::TranslatePlan(h.plan, rope, vulkan::DispatchOptions{}, &dispatches, &scratch);
  EXPECT_TRUE(s.ok()) << s.message();
  return dispatches.size();
}

// Rotate-half RoPE, bit for bit the CPU's: queries and keys of a global layer (base 1e6) in one
// dispatch, then those of a sliding layer (base 1e4), then rotate-half and adjacent pairs on
// two tensors with the same rows (never one dispatch), and an awkward head size; at positions
// from the start to the end of the context.
TEST(VulkanKernelsTest, RopeHalvesWithPerLayerBases) {
  const int64_t chunk = 5, hd = 256;
  PlanHarness h(chunk, 2048);
  auto tensor = [&](int64_t width, const char* name) {
    return h.Tensor(BufferId::kArena, DType::kF32, {chunk, width}, name);
  };
  uint32_t q0 = tensor(4 * hd, "q0"), k0 = tensor(hd, "k0");
  uint32_t q1 = tensor(4 * hd, "q1"), k1 = tensor(hd, "k1");
  uint32_t a = tensor(2 * hd, "a"), b = tensor(2 * hd, "b"), c = tensor(30, "c");
  auto rope = [&](uint32_t x, int32_t head_dim, float base, bool halves) {
    OpParams p;
    p.head_dim = head_dim;
    p.rope_base = base;
    p.rope_halves = halves;
    h.AddOp(OpKind::kRope, {}, {x}, p);
  };
  rope(q0, hd, 1e6f, true);
  rope(k0, hd, 1e6f, true);
  rope(q1, hd, 1e4f, true);
  rope(k1, hd, 1e4f, true);
  rope(a, hd, 1e4f, true);
  rope(b, hd, 1e4f, false);
  rope(c, 10, 1e4f, true);
  h.Allocate();
  EXPECT_EQ(DispatchCount(h), 5u);  // q0+k0, q1+k1, a, b, c
  uint32_t seed = 70;
  for (uint32_t t : {q0, k0, q1, k1, a, b, c}) {
    PutFloats(h, t, RandomFloats(size_t(h.plan.tensors[t].elements()), seed++, 2.0f));
  }
  for (int32_t position : {0, 1500, 2044}) {
    SCOPED_TRACE("position " + std::to_string(position));
    RUN_OR_SKIP(r, h, {{4, position}});
    for (uint32_t t : {q0, k0, q1, k1, a, b, c}) {
      ExpectClose(Values(h, r.cpu, t, 4), Values(h, r.gpu, t, 4), 0.0f, h.plan.tensors[t].name);
    }
  }
}

// Gemma 3 270M's attention: head size 256, four query heads over one KV head, rotate-half RoPE,
// a sliding ring (base 1e4) and a static global cache (base 1e6); prefill plans (tiled) and
// decode plans, f16, f32, q4 and q8 caches, and batched rows. q8's kernels hold a 256-wide head
// in float arrays (the Hadamard transform), which lavapipe compiles at the first step for longer
// than the step's 120 s bound on a cold shader cache: a recording's first run has ten minutes
// (vk_fence_wait.h). q8 runs the sliding ring only, the one prefill form lavapipe takes (style
// 0) and decode, to keep its cold compiles to the variants a model would use.
TEST(VulkanKernelsTest, HeadSize256MultiQueryHybridCache) {
  struct Mode {
    CachePolicy policy;
    KvQuant quant;
    DType kv;
  };
  const Mode modes[] = {{CachePolicy::kSlidingWindow, KvQuant::kNone, DType::kF16},
                        {CachePolicy::kStatic, KvQuant::kNone, DType::kF16},
                        {CachePolicy::kSlidingWindow, KvQuant::kNone, DType::kF32},
                        {CachePolicy::kStatic, KvQuant::kNone, DType::kF32},
                        {CachePolicy::kStatic, KvQuant::kQ4, DType::kF16},
                        {CachePolicy::kSlidingWindow, KvQuant::kQ8, DType::kF16}};
  std::vector<StepParams> decode;
  for (int32_t p = 0; p < 40; ++p) decode.push_back({1, p});
  for (const Mode& m : modes) {
    for (int32_t chunk : {9, 1}) {
      for (int style : {0, 1}) {
        if (chunk == 1 && style == 1) continue;  // the split kernel has one form
        if (m.quant == KvQuant::kQ8 && style == 1) continue;
        SCOPED_TRACE(std::string(CachePolicyName(m.policy)) + " quant " +
                     std::to_string(int(m.quant)) + " " + DTypeName(m.kv) + " chunk " +
                     std::to_string(chunk) + " style " + std::to_string(style));
        CacheCase cc;
        cc.kv = m.kv;
        cc.quant = m.quant;
        cc.policy = m.policy;
        cc.hd = 256;
        cc.heads = 4;
        cc.kv_heads = 1;
        cc.chunk = chunk;
        cc.style = style;
        cc.rope_halves = true;
        const bool sliding = m.policy == CachePolicy::kSlidingWindow;
        cc.rope_base = sliding ? 1e4f : 1e6f;
        cc.window = sliding ? 13 : 0;
        cc.steps = chunk == 1 ? decode : RingSteps();
        RunCacheCase(cc);
      }
    }
  }
  std::vector<int32_t> storage;
  CacheCase batched;
  batched.policy = CachePolicy::kSlidingWindow;
  batched.hd = 256;
  batched.heads = 4;
  batched.kv_heads = 1;
  batched.rope_halves = true;
  batched.window = 13;
  batched.batch = 4;
  batched.rows_are_sequences = true;
  batched.steps = BatchedSteps(true, &storage);
  RunCacheCase(batched);
}

// Head size 256 far past llvmpipe's loop budget (65,535 loop iterations per invocation, shared
// by all of its loops): prefill chunks of 64 rows up to 640 keys, on the tiled kernel in both
// workgroup forms. A 64-row chunk at position 448 reaching past ~460 keys gave wrong rows
// when that kernel's head-wide loops ran 64 iterations per key.
TEST(VulkanKernelsTest, HeadSize256TiledLongPrefill) {
  for (int style : {0, 1}) {
    SCOPED_TRACE("style " + std::to_string(style));
    CacheCase cc;
    cc.kv = DType::kF32;
    cc.hd = 256;
    cc.heads = 4;
    cc.kv_heads = 1;
    cc.chunk = 64;
    cc.max_context = 640;
    cc.style = style;
    cc.force_tiled = true;
    cc.rope_halves = true;
    cc.rope_base = 1e6f;
    for (int32_t p = 0; p < cc.max_context; p += cc.chunk) cc.steps.push_back({cc.chunk, p});
    RunCacheCase(cc);
  }
}

// Decode far into a 4,096-key cache with the split kernel asked for one part per row: one
// invocation over every key would run ~4,096 × 131 loop iterations at head size 256 (~4,096 ×
// 35 at 64), past llvmpipe's budget; the dispatcher cuts the span into as many parts as the
// budget needs (vk_loop_budget.h). The cache's unwritten slots hold random finite values.
TEST(VulkanKernelsTest, SplitDecodeLongContextWithinLoopBudget) {
  for (int32_t hd : {256, 64}) {
    SCOPED_TRACE("head size " + std::to_string(hd));
    CacheCase cc;
    cc.kv = DType::kF32;
    cc.hd = hd;
    cc.heads = hd == 256 ? 4 : 6;
    cc.kv_heads = hd == 256 ? 1 : 2;
    cc.chunk = 1;
    cc.max_context = 4096;
    cc.splits_budget = 1;
    cc.steps = {{1, 0}, {1, 2047}, {1, 4095}};
    RunCacheCase(cc);
  }
}

// The attention dispatches of a plan of one f16 attention op over a static cache of `slots`
// (no device needed), and the translation's status.
std::vector<vulkan::Dispatch> AttentionDispatches(int32_t hd, int32_t heads, int32_t kv_heads,
                                                  int32_t chunk, int32_t slots, Status* status) {
  PlanHarness h(chunk, slots);
  uint32_t q = h.Tensor(BufferId::kArena, DType::kF32, {chunk, heads * hd}, "q");
  uint32_t kc = h.Tensor(BufferId::kKvCache, DType::kF16, {kv_heads, slots, hd}, "k cache");
  uint32_t vc = h.Tensor(BufferId::kKvCache, DType::kF16, {kv_heads, slots, hd}, "v cache");
  uint32_t sc = h.Tensor(BufferId::kArena, DType::kF32, {heads, slots}, "scores");
  uint32_t o = h.Tensor(BufferId::kArena, DType::kF32, {chunk, heads * hd}, "o");
  OpParams p;
  p.n_heads = heads;
  p.n_kv_heads = kv_heads;
  p.head_dim = hd;
  p.scale = 1.0f / std::sqrt(float(hd));
  p.cache_slots = slots;
  h.AddOp(OpKind::kAttention, {q, kc, vc, sc}, {o}, p);
  h.Allocate();
  std::vector<vulkan::Dispatch> all = TranslateWithStyle(h, 0, status), attention;
  for (const vulkan::Dispatch& d : all) {
    if (std::strncmp(d.shader, "attention_", 10) == 0) attention.push_back(d);
  }
  return attention;
}

// The dispatcher's choice follows llvmpipe's loop budget (vk_loop_budget.h): Gemma 3's head
// size 256 prefills tiled over a short cache, split over a long one with parts each within
// the budget (decode too), and a cache no 256 parts can cover is refused with a reason.
TEST(VulkanKernelsTest, AttentionKernelChoiceFollowsLoopBudget) {
  const uint64_t allowance = vulkan::kLlvmpipeLoopBudget * 15 / 16;
  const vulkan::AttentionLoopShape hd256{256, false, 0};
  // The counts: tiled at 19 iterations a key plus its tiles', split at 131 a key.
  EXPECT_EQ(vulkan::TiledLoopIterations(hd256, 8, 128) - vulkan::TiledLoopIterations(hd256, 0, 128),
            8u * 19u + 9u);
  EXPECT_EQ(vulkan::SplitLoopIterations(hd256, 1) - vulkan::SplitLoopIterations(hd256, 0), 131u);
  for (int32_t chunk : {64, 1}) {
    for (int32_t slots : {512, 2048, 4096, 32768}) {
      SCOPED_TRACE("chunk " + std::to_string(chunk) + ", slots " + std::to_string(slots));
      Status status;
      std::vector<vulkan::Dispatch> d = AttentionDispatches(256, 4, 1, chunk, slots, &status);
      ASSERT_TRUE(status.ok()) << status.message();
      ASSERT_FALSE(d.empty());
      const bool tiled = std::strncmp(d[0].shader, "attention_tiled_", 16) == 0;
      EXPECT_EQ(tiled, chunk > 1 && slots <= 2048) << d[0].shader;
      if (tiled) continue;
      const uint64_t parts = d[0].pc.e, keys = (uint64_t(slots) + parts - 1) / parts;
      EXPECT_LE(vulkan::SplitLoopIterations(hd256, keys), allowance) << parts << " parts";
    }
  }
  Status status;
  AttentionDispatches(256, 4, 1, 1, 131072, &status);
  EXPECT_EQ(status.code(), StatusCode::kUnsupported);
  EXPECT_NE(std::strstr(status.message(), "loop budget"), nullptr) << status.message();
}

// Bad steps fail with a status on the device as on the CPU: a sequence twice, an id outside
// the batch, a missing row array.
TEST(VulkanKernelsTest, BadBatchedStepsFail) {
  const int32_t seqs[2] = {1, 1}, far[2] = {0, 4}, positions[2] = {3, 4};
  for (StepParams bad : {StepParams{2, 0, 0, seqs, positions}, StepParams{2, 0, 0, far, positions},
                         StepParams{2, 0, 0, nullptr, positions}}) {
    PlanHarness h(4, 64);
    h.plan.limits.max_batch = 4;
    h.plan.limits.rows_are_sequences = true;
    uint32_t x = h.Tensor(BufferId::kArena, DType::kF32, {4, 64}, "x");
    OpParams rope;
    rope.head_dim = 64;
    rope.rope_base = 10000.0f;
    h.AddOp(OpKind::kRope, {}, {x}, rope);
    h.Allocate();
    vulkan::VulkanTestOptions test;
    test.validation = true;
    vulkan::VulkanBackend vk(BackendOptions{}, test);
    RunResult r = RunPlan(vk, h, {bad});
    if (!r.status.ok() && std::strstr(r.status.message(), "no Vulkan") != nullptr) {
      GTEST_SKIP() << "no Vulkan device";
    }
    EXPECT_EQ(r.status.code(), StatusCode::kInvalidArgument) << r.status.message();
  }
}

#else
TEST(VulkanKernelsTest, Skipped) {
  GTEST_SKIP() << "built without Vulkan (STATICLM_VULKAN=OFF)";
}
#endif

}  // namespace
}  // namespace staticlm::vktest
