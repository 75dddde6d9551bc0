// The CPU backend with Q5_0, Q5_1, Q4_K, Q5_K and Q6_K weights: one-op plans built by hand and
// run on two threads with each SIMD ISA's kernels, the reference kernels and int8 activations.
// Every one of these types has integer kernels at 8 bits (Q5_K and Q6_K only at 8: with int16
// activations their products, and every fused product that includes one, keep f32):
//  - with the reference kernels and f32 activations, each output equals, bit for bit, an f32
//    product written here over the dequantized weights (summed in index order, as the
//    reference does);
//  - with an ISA's kernels, each output equals, bit for bit, that ISA's product called directly
//    (its bits depend only on the row, the weight row and the ISA: fast_matmul.h), however the
//    backend splits and fuses the work. The reference fallback, or the integer path's
//    quantized x, would give other bits and fail;
//  - a product with int8 activations equals the integer reference (quantize x, then
//    ref::MatMulIntRange) bit for bit, with the reference and the SIMD kernels alike.
// Embedding tables of these types give their dequantized rows; the integer reference refuses
// Q5_K and Q6_K with int16 activations loudly (NaN) rather than decoding them as Q4_0.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/dequantize.h"
#include "backends/cpu/fast_matmul.h"
#include "backends/cpu/matmul_int8.h"
#include "tests/vulkan_test_support.h"

namespace staticlm::cpu {
namespace {

using vktest::PlanHarness;
using vktest::RunResult;

const DType kNewTypes[] = {DType::kQ5_0, DType::kQ5_1, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K};

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof(b));
  return b;
}

struct Config {
  std::string name;
  bool reference;
  int activation_bits;
  MatMulIsa isa;  // the kernels asked of the backend
};

// The reference kernels and every SIMD ISA this build and CPU run, each with f32 and int8
// activations. The integer reference always exists; the SIMD one where the CPU has it (else
// the backend keeps f32 activations throughout).
std::vector<Config> Configs() {
  std::vector<Config> configs = {{"reference", true, 0, MatMulIsa::kReference},
                                 {"int8 reference", true, 8, MatMulIsa::kReference}};
  for (MatMulIsa isa : {MatMulIsa::kAvx2, MatMulIsa::kAvx512, MatMulIsa::kNeon}) {
    if (MatMulFor(isa) == nullptr || !IsaSupported(isa, DetectCpuFeatures())) continue;
    configs.push_back({MatMulIsaName(isa), false, 0, isa});
    configs.push_back({std::string(MatMulIsaName(isa)) + " int8", false, 8, isa});
  }
  return configs;
}

RunResult RunOnCpu(const PlanHarness& h, const Config& c, int64_t n_tokens,
                   std::string* description) {
  BackendOptions options;
  options.threads = 2;
  options.reference_kernels = c.reference;
  options.quantized_activations = c.activation_bits;
  if (!c.reference) std::snprintf(options.isa, sizeof(options.isa), "%s", MatMulIsaName(c.isa));
  CpuBackend backend(options);
  StepParams step{};
  step.n_tokens = static_cast<int32_t>(n_tokens);
  RunResult r = vktest::RunPlan(backend, h, {step});
  *description = backend.description();
  return r;
}

// y (rows, n_out) = x · wᵀ from the dequantized weights, f32 products summed in index order.
std::vector<float> DequantizedProduct(DType type, const std::vector<uint8_t>& w, int64_t n_out,
                                      int64_t n_in, const std::vector<float>& x, int64_t rows) {
  const uint64_t row_bytes = DTypeBytes(type, static_cast<uint64_t>(n_in));
  std::vector<float> wf(static_cast<size_t>(n_in));
  std::vector<float> y(static_cast<size_t>(rows * n_out));
  for (int64_t o = 0; o < n_out; ++o) {
    DequantizeRow(type, w.data() + o * row_bytes, n_in, wf.data());
    for (int64_t r = 0; r < rows; ++r) {
      float sum = 0.0f;
      for (int64_t i = 0; i < n_in; ++i) sum += wf[size_t(i)] * x[size_t(r * n_in + i)];
      y[size_t(r * n_out + o)] = sum;
    }
  }
  return y;
}

// x quantized to int8 by the reference, then the integer reference product.
std::vector<float> IntegerProduct(DType type, const std::vector<uint8_t>& w, int64_t n_out,
                                  int64_t n_in, const std::vector<float>& x, int64_t rows) {
  std::vector<int16_t> q(static_cast<size_t>(rows * n_in));
  std::vector<float> d(static_cast<size_t>(rows * n_in / kQuantBlock));
  std::vector<int32_t> sum(d.size());
  ref::QuantizeInt8(x.data(), rows, n_in, q.data(), d.data(), sum.data());
  std::vector<float> y(static_cast<size_t>(rows * n_out));
  ref::MatMulIntRange(type, w.data(), n_out, {q.data(), d.data(), sum.data(), rows, n_in, 8},
                      y.data(), 0, n_out);
  return y;
}

// What configuration c must give: the integer reference's product when the op's weights all
// have integer kernels (`integer_op`) and c quantizes activations, else the reference's
// index-order sum, or c's ISA's own product.
std::vector<float> Expected(const Config& c, DType type, const std::vector<uint8_t>& w,
                            int64_t n_out, int64_t n_in, const std::vector<float>& x, int64_t rows,
                            bool integer_op) {
  if (integer_op && c.activation_bits == 8) return IntegerProduct(type, w, n_out, n_in, x, rows);
  if (c.reference) return DequantizedProduct(type, w, n_out, n_in, x, rows);
  std::vector<float> y(static_cast<size_t>(rows * n_out));
  MatMulFor(c.isa)(type, w.data(), n_out, n_in, x.data(), rows, y.data());
  return y;
}

void ExpectBitwise(const std::vector<float>& want, const std::vector<float>& got,
                   const char* what) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(Bits(got[i]), Bits(want[i]))
        << what << "[" << i << "]: " << got[i] << " vs " << want[i];
  }
}

// A plain product with a weight of each new type; a Q8_0 product in front of it, so that the
// int8 configuration really sets up its integer kernels, and must refuse them for a Q5_K op and
// use them for a Q5, Q4_K or Q6_K one.
TEST(QuantWeightsCpuTest, ProductsGiveTheirKernelsBits) {
  for (DType type : kNewTypes) {
    const int64_t n_out = 37, n_in = 512, chunk = 6, rows = 5;
    PlanHarness h(chunk);
    uint32_t x = h.Tensor(BufferId::kArena, DType::kF32, {chunk, n_in}, "x");
    uint32_t w8 = h.Tensor(BufferId::kWeights, DType::kQ8_0, {16, n_in}, "w_q8_0");
    uint32_t y8 = h.Tensor(BufferId::kArena, DType::kF32, {chunk, 16}, "y_q8_0");
    uint32_t w = h.Tensor(BufferId::kWeights, type, {n_out, n_in}, "w");
    uint32_t y = h.Tensor(BufferId::kArena, DType::kF32, {chunk, n_out}, "y");
    h.AddOp(OpKind::kMatMul, {x, w8}, {y8}, OpParams{});
    h.AddOp(OpKind::kMatMul, {x, w}, {y}, OpParams{});
    h.Allocate();
    auto wq8 = vktest::RandomWeights(DType::kQ8_0, 16 * n_in, 4);
    std::memcpy(h.Data(w8), wq8.data(), wq8.size());
    auto wb = vktest::RandomWeights(type, n_out * n_in, 2);
    std::memcpy(h.Data(w), wb.data(), wb.size());
    auto xv = vktest::RandomFloats(chunk * n_in, 3);
    vktest::PutFloats(h, x, xv);
    for (const Config& c : Configs()) {
      SCOPED_TRACE(std::string(DTypeName(type)) + " " + c.name);
      std::string description;
      RunResult r = RunOnCpu(h, c, rows, &description);
      ASSERT_TRUE(r.status.ok()) << r.status.message();
      const bool integer = description.find("int8 activations") != std::string::npos;
      if (c.activation_bits == 8 && c.reference) {
        EXPECT_TRUE(integer) << description;  // the integer path is set up, and must refuse
      }
      if (c.activation_bits == 8 && !integer) std::printf("note: %s\n", description.c_str());
      ExpectBitwise(Expected(c, type, wb, n_out, n_in, xv, rows, IntSupportsType(type, 8)),
                    vktest::Values(h, r, y, rows), "y");
    }
  }
}

// The fused Q/K/V form (three weights, one input) with three new types at once: all with int8
// kernels (the op quantizes x), or one without (Q5_K: the whole op keeps f32 activations).
void CheckFusedProductOf(const DType (&types)[3]) {
  const int64_t n_in = 256, chunk = 4, rows = 3;
  const int64_t n_out[3] = {64, 32, 40};
  bool integer_op = true;
  for (DType t : types) integer_op = integer_op && IntSupportsType(t, 8);
  PlanHarness h(chunk);
  uint32_t x = h.Tensor(BufferId::kArena, DType::kF32, {chunk, n_in}, "x");
  uint32_t w[3], y[3];
  for (int i = 0; i < 3; ++i) {
    w[i] = h.Tensor(BufferId::kWeights, types[i], {n_out[i], n_in}, DTypeName(types[i]));
    y[i] = h.Tensor(BufferId::kArena, DType::kF32, {chunk, n_out[i]}, "y");
  }
  OpParams p;
  p.n_weights = 3;
  h.AddOp(OpKind::kMatMul, {x, w[0], w[1], w[2]}, {y[0], y[1], y[2]}, p);
  h.Allocate();
  std::vector<uint8_t> bytes[3];
  for (int i = 0; i < 3; ++i) {
    bytes[i] = vktest::RandomWeights(types[i], n_out[i] * n_in, 10 + i);
    std::memcpy(h.Data(w[i]), bytes[i].data(), bytes[i].size());
  }
  auto xv = vktest::RandomFloats(chunk * n_in, 5);
  vktest::PutFloats(h, x, xv);
  for (const Config& c : Configs()) {
    SCOPED_TRACE(c.name);
    std::string description;
    RunResult r = RunOnCpu(h, c, rows, &description);
    ASSERT_TRUE(r.status.ok()) << r.status.message();
    for (int i = 0; i < 3; ++i) {
      SCOPED_TRACE(DTypeName(types[i]));
      ExpectBitwise(Expected(c, types[i], bytes[i], n_out[i], n_in, xv, rows, integer_op),
                    vktest::Values(h, r, y[i], rows), "y");
    }
  }
}

TEST(QuantWeightsCpuTest, FusedProductOfThreeNewTypes) {
  CheckFusedProductOf({DType::kQ5_0, DType::kQ4_K, DType::kQ6_K});
  CheckFusedProductOf({DType::kQ5_0, DType::kQ6_K, DType::kQ5_K});
}

// The integer reference takes neither Q5_K nor Q6_K with int16 activations: called with one
// anyway (a contract violation the backend never commits), it must not decode the bytes as
// another type nor compute a product that could overflow.
TEST(QuantWeightsCpuTest, IntegerReferenceRefusesLoudly) {
  const int64_t n_out = 3, n_in = 256, rows = 2;
  const std::vector<float> x = vktest::RandomFloats(size_t(rows * n_in), 8);
  std::vector<int16_t> q(size_t(rows * n_in));
  std::vector<float> d(size_t(rows * n_in / kQuantBlock));
  std::vector<int32_t> sum(d.size());
  const std::pair<DType, int> refused[] = {{DType::kQ5_K, 16}, {DType::kQ6_K, 16}};
  for (const auto& [type, bits] : refused) {
    SCOPED_TRACE(std::string(DTypeName(type)) + " int" + std::to_string(bits));
    (bits == 16 ? ref::QuantizeInt16 : ref::QuantizeInt8)(x.data(), rows, n_in, q.data(), d.data(),
                                                          sum.data());
    EXPECT_FALSE(IntSupportsType(type, bits));
    const std::vector<uint8_t> w = vktest::RandomWeights(type, n_out * n_in, 9);
    std::vector<float> y(size_t(rows * n_out), 0.0f);
    ref::MatMulIntRange(type, w.data(), n_out, {q.data(), d.data(), sum.data(), rows, n_in, bits},
                        y.data(), 0, n_out);
    for (float v : y) EXPECT_TRUE(std::isnan(v)) << v;
  }
}

TEST(QuantWeightsCpuTest, EmbeddingRowsAreDequantizedRows) {
  for (DType type : kNewTypes) {
    SCOPED_TRACE(DTypeName(type));
    const int64_t vocab = 9, width = 512, chunk = 4;
    PlanHarness h(chunk);
    uint32_t table = h.Tensor(BufferId::kWeights, type, {vocab, width}, "table");
    uint32_t out = h.Tensor(BufferId::kArena, DType::kF32, {chunk, width}, "out");
    h.AddOp(OpKind::kEmbed, {table, h.plan.tokens_tensor}, {out}, OpParams{});
    h.Allocate();
    auto wb = vktest::RandomWeights(type, vocab * width, 6);
    std::memcpy(h.Data(table), wb.data(), wb.size());
    const int32_t ids[chunk] = {8, 0, 3, 8};
    std::memcpy(h.Data(h.plan.tokens_tensor), ids, sizeof(ids));
    std::vector<float> want(static_cast<size_t>(chunk * width));
    const uint64_t row_bytes = DTypeBytes(type, width);
    for (int64_t r = 0; r < chunk; ++r) {
      DequantizeRow(type, wb.data() + ids[r] * row_bytes, width, want.data() + r * width);
    }
    for (const Config& c : Configs()) {
      SCOPED_TRACE(c.name);
      std::string description;
      RunResult r = RunOnCpu(h, c, chunk, &description);
      ASSERT_TRUE(r.status.ok()) << r.status.message();
      ExpectBitwise(want, vktest::Values(h, r, out, chunk), "row");
    }
  }
}

}  // namespace
}  // namespace staticlm::cpu
