// The CPU backend with BackendOptions::quantized_activations 8 and 16: one-op plans built by
// hand, run on two threads. A plain product equals the integer reference (quantize, then
// ref::MatMulIntRange) bit for bit, with the SIMD kernels and with the reference kernels; the
// fused forms (RMSNorm + gate/up + SiLU, Q/K/V, residual accumulation) stay within the
// quantization error of the f32-activation run and differ from it (so the integer path was
// used; int8 SIMD products with weights of a packed type read the packed copy); a fused product
// with a weight the integer path cannot take (F16) keeps f32 activations bit for bit, as do Q6_K
// and Q5_K products with int16 activations (matmul_int8.h); a width other than 0, 8 or 16 fails
// Prepare.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "backends/cpu/matmul_int8.h"
#include "backends/cpu/packed_weights.h"
#include "tests/vulkan_test_support.h"

namespace staticlm::cpu {
namespace {

using vktest::PlanHarness;
using vktest::RunResult;

RunResult RunOnCpu(const PlanHarness& h, int bits, bool reference, int64_t n_tokens,
                   std::string* description = nullptr) {
  BackendOptions options;
  options.threads = 2;
  options.quantized_activations = bits;
  options.reference_kernels = reference;
  CpuBackend backend(options);
  StepParams step{};
  step.n_tokens = static_cast<int32_t>(n_tokens);
  step.position = 0;
  RunResult r = vktest::RunPlan(backend, h, {step});
  if (description != nullptr) *description = backend.description();
  return r;
}

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof(b));
  return b;
}

bool SimdHere() {
  return SelectIntKernels(DetectCpuFeatures(), 8).matmul != nullptr;
}

void CheckPlainProduct(int bits) {
  for (DType type : {DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ8_0,
                     DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    if (!IntSupportsType(type, bits)) continue;  // Q5_K, Q6_K at 16 bits: see below
    SCOPED_TRACE(std::string(DTypeName(type)) + " int" + std::to_string(bits));
    const int64_t n_in = type == DType::kQ4_K || type == DType::kQ5_K ? 512
                         : type == DType::kQ6_K                       ? 768
                                                                      : 160;
    const int64_t n_out = 200, chunk = 11, rows = 9;
    PlanHarness h(chunk);
    uint32_t x = h.Tensor(BufferId::kArena, DType::kF32, {chunk, n_in}, "x");
    uint32_t w = h.Tensor(BufferId::kWeights, type, {n_out, n_in}, "w");
    uint32_t y = h.Tensor(BufferId::kArena, DType::kF32, {chunk, n_out}, "y");
    h.AddOp(OpKind::kMatMul, {x, w}, {y}, OpParams{});
    h.Allocate();
    auto wb = vktest::RandomWeights(type, n_out * n_in, 2);
    std::memcpy(h.Data(w), wb.data(), wb.size());
    auto xv = vktest::RandomFloats(chunk * n_in, 3);
    vktest::PutFloats(h, x, xv);

    std::vector<int16_t> q(static_cast<size_t>(rows * n_in));
    std::vector<float> d(static_cast<size_t>(rows * n_in / kQuantBlock));
    std::vector<int32_t> sum(d.size());
    (bits == 16 ? ref::QuantizeInt16 : ref::QuantizeInt8)(xv.data(), rows, n_in, q.data(), d.data(),
                                                          sum.data());
    std::vector<float> want(static_cast<size_t>(rows * n_out));
    ref::MatMulIntRange(type, wb.data(), n_out, {q.data(), d.data(), sum.data(), rows, n_in, bits},
                        want.data(), 0, n_out);

    std::vector<bool> modes = {true};
    if (SimdHere()) modes.push_back(false);
    for (bool reference : modes) {
      std::string description;
      RunResult r = RunOnCpu(h, bits, reference, rows, &description);
      ASSERT_TRUE(r.status.ok()) << r.status.message();
      const std::string named = "int" + std::to_string(bits) + " activations";
      EXPECT_NE(description.find(named), std::string::npos) << description;
      // int8 SIMD products stream every integer type's weights from a packed copy
      // (packed_weights.h).
      const bool packed = bits == 8 && !reference && PackedSupportsType(type);
      EXPECT_EQ(description.find("1 matrices packed") != std::string::npos, packed) << description;
      std::vector<float> got = vktest::Values(h, r, y, rows);
      for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_EQ(Bits(got[i]), Bits(want[i])) << (reference ? "reference" : "simd") << " at " << i
                                               << ": " << got[i] << " vs " << want[i];
      }
    }
  }
}

TEST(CpuInt8BackendTest, PlainProductEqualsTheIntegerReferenceBitwise) {
  CheckPlainProduct(8);
  CheckPlainProduct(16);
}

// A Q6_K or Q5_K product asked for int16 activations keeps f32 ones (Q6_K: its int32 bound;
// Q5_K: no int16 kernel): the bits of the f32 run, on the reference kernels and on the SIMD ones,
// and no integer kernels are set up for it alone.
TEST(CpuInt8BackendTest, Q6KAndQ5KWithInt16ActivationsKeepF32) {
  for (DType type : {DType::kQ6_K, DType::kQ5_K}) {
    SCOPED_TRACE(DTypeName(type));
    const int64_t n_out = 40, n_in = 512, chunk = 4, rows = 3;
    PlanHarness h(chunk);
    uint32_t x = h.Tensor(BufferId::kArena, DType::kF32, {chunk, n_in}, "x");
    uint32_t w = h.Tensor(BufferId::kWeights, type, {n_out, n_in}, "w");
    uint32_t y = h.Tensor(BufferId::kArena, DType::kF32, {chunk, n_out}, "y");
    h.AddOp(OpKind::kMatMul, {x, w}, {y}, OpParams{});
    h.Allocate();
    auto wb = vktest::RandomWeights(type, n_out * n_in, 4);
    std::memcpy(h.Data(w), wb.data(), wb.size());
    vktest::PutFloats(h, x, vktest::RandomFloats(chunk * n_in, 5));
    for (bool reference : {true, false}) {
      SCOPED_TRACE(reference ? "reference" : "simd");
      RunResult f32 = RunOnCpu(h, 0, reference, rows);
      std::string description;
      RunResult r = RunOnCpu(h, 16, reference, rows, &description);
      ASSERT_TRUE(f32.status.ok() && r.status.ok()) << r.status.message();
      EXPECT_EQ(description.find("int16 activations"), std::string::npos) << description;
      std::vector<float> want = vktest::Values(h, f32, y, rows);
      std::vector<float> got = vktest::Values(h, r, y, rows);
      for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_FALSE(std::isnan(got[i])) << i;
        ASSERT_EQ(Bits(got[i]), Bits(want[i])) << i << ": " << got[i] << " vs " << want[i];
      }
    }
  }
}

void CheckFusedForms(int bits) {
  SCOPED_TRACE(bits);
  const int64_t n_in = 96, chunk = 6, ffn = 70, rows = 5;
  PlanHarness h(chunk);
  uint32_t x = h.Tensor(BufferId::kArena, DType::kF32, {chunk, n_in}, "x");
  uint32_t g = h.Tensor(BufferId::kWeights, DType::kQ4_1, {ffn, n_in}, "gate");
  uint32_t u = h.Tensor(BufferId::kWeights, DType::kQ4_1, {ffn, n_in}, "up");
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
  uint32_t wq = h.Tensor(BufferId::kWeights, DType::kQ8_0, {64, n_in}, "wq");
  uint32_t wk = h.Tensor(BufferId::kWeights, DType::kQ4_0, {32, n_in}, "wk");
  uint32_t wv = h.Tensor(BufferId::kWeights, DType::kQ4_1, {32, n_in}, "wv");
  uint32_t q = h.Tensor(BufferId::kArena, DType::kF32, {chunk, 64}, "q");
  uint32_t k = h.Tensor(BufferId::kArena, DType::kF32, {chunk, 32}, "k");
  uint32_t v = h.Tensor(BufferId::kArena, DType::kF32, {chunk, 32}, "v");
  OpParams p3;
  p3.n_weights = 3;
  h.AddOp(OpKind::kMatMul, {xn, wq, wk, wv}, {q, k, v}, p3);
  // Mixed: Q8_0 and F16 sharing x; the whole op keeps f32 activations.
  uint32_t wm = h.Tensor(BufferId::kWeights, DType::kQ8_0, {40, n_in}, "wm");
  uint32_t wf = h.Tensor(BufferId::kWeights, DType::kF16, {24, n_in}, "wf");
  uint32_t m0 = h.Tensor(BufferId::kArena, DType::kF32, {chunk, 40}, "m0");
  uint32_t m1 = h.Tensor(BufferId::kArena, DType::kF32, {chunk, 24}, "m1");
  OpParams p2;
  p2.n_weights = 2;
  h.AddOp(OpKind::kMatMul, {xn, wm, wf}, {m0, m1}, p2);
  uint32_t wo = h.Tensor(BufferId::kWeights, DType::kQ4_1, {n_in, 64}, "wo");
  uint32_t o = h.Tensor(BufferId::kArena, DType::kF32, {chunk, n_in}, "o");
  OpParams pa;
  pa.accumulate = true;
  h.AddOp(OpKind::kMatMul, {q, wo}, {o, x}, pa);
  h.Allocate();
  uint32_t seed = 10;
  for (uint32_t t : {g, u, wq, wk, wv, wm, wf, wo}) {
    const TensorRegion& tr = h.plan.tensors[t];
    auto b = vktest::RandomWeights(tr.dtype, uint64_t(tr.elements()), seed++);
    std::memcpy(h.Data(t), b.data(), b.size());
  }
  vktest::PutFloats(h, nw, vktest::RandomFloats(n_in, 20));
  vktest::PutFloats(h, x, vktest::RandomFloats(chunk * n_in, 21));

  RunResult f32 = RunOnCpu(h, 0, false, rows);
  RunResult int8 = RunOnCpu(h, bits, false, rows);
  // Per-block quantization error is ≤ 1/(2Q) of the block's largest |x| (Q = 127 or 32767);
  // over a product of 96 terms with random signs that stays far below 5 % of the output's
  // range for int8, and 256 times less for int16.
  const float tolerance = bits == 8 ? 0.05f : 0.05f / 256.0f;
  ASSERT_TRUE(f32.status.ok()) << f32.status.message();
  ASSERT_TRUE(int8.status.ok()) << int8.status.message();
  for (uint32_t t : {y0, y1, q, k, v, o, x}) {
    std::vector<float> a = vktest::Values(h, f32, t, rows), b = vktest::Values(h, int8, t, rows);
    float scale = 0.0f;
    for (float value : a) scale = std::max(scale, std::fabs(value));
    bool differs = false;
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_LE(std::fabs(a[i] - b[i]), tolerance * scale)
          << h.plan.tensors[t].name << "[" << i << "]";
      differs = differs || Bits(a[i]) != Bits(b[i]);
    }
    EXPECT_TRUE(differs) << h.plan.tensors[t].name << ": int8 activations were not used";
  }
  // The mixed op reads xn, which int8 leaves bitwise unchanged (the norm is the same).
  for (uint32_t t : {xn, m0, m1}) {
    std::vector<float> a = vktest::Values(h, f32, t, rows), b = vktest::Values(h, int8, t, rows);
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(Bits(a[i]), Bits(b[i])) << h.plan.tensors[t].name << "[" << i << "]";
    }
  }
}

TEST(CpuInt8BackendTest, FusedFormsStayCloseToF32AndMixedTypesKeepF32) {
  if (!SimdHere()) GTEST_SKIP() << "no integer SIMD implementation runs on this CPU";
  CheckFusedForms(8);
  CheckFusedForms(16);
}

TEST(CpuInt8BackendTest, OffByDefaultAndOtherWidthsRefused) {
  BackendOptions options;
  EXPECT_EQ(options.quantized_activations, 0);
  PlanHarness h(4);
  uint32_t x = h.Tensor(BufferId::kArena, DType::kF32, {4, 64}, "x");
  uint32_t w = h.Tensor(BufferId::kWeights, DType::kQ8_0, {16, 64}, "w");
  uint32_t y = h.Tensor(BufferId::kArena, DType::kF32, {4, 16}, "y");
  h.AddOp(OpKind::kMatMul, {x, w}, {y}, OpParams{});
  h.Allocate();
  std::string description;
  RunResult r = RunOnCpu(h, 0, false, 4, &description);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(description.find("activations"), std::string::npos) << description;
  r = RunOnCpu(h, 4, false, 4);
  EXPECT_FALSE(r.status.ok());
}

}  // namespace
}  // namespace staticlm::cpu
