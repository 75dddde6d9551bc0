// The Vulkan shaders of the 5-bit and K-quant weight types (Q5_0, Q5_1, Q4_K, Q5_K, Q6_K)
// against the CPU reference kernels (the oracle) on random blocks, with the validation layer on:
// embedding lookups bit for bit, and every matmul variant the dispatcher picks for them — the
// three fused forms (plain, gate/up + SiLU, residual accumulation), the three styles (a column
// per invocation, per subgroup-reduced workgroup, and unit loads; rows or offsets that do not
// fit a unit fall back to the first), decode (one row) and prefill (a partial tile).
// Rows of an odd number of 22- or 210-byte blocks put every other row 2 bytes off a word
// boundary. Skips when this build or machine has no Vulkan device.
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/dequantize.h"
#include "tests/vulkan_test_support.h"
#if defined(STATICLM_HAVE_VULKAN)
#include "tests/vulkan_compare.h"
#endif

namespace staticlm::vktest {
namespace {

#if defined(STATICLM_HAVE_VULKAN)

const DType kQuantTypes[] = {DType::kQ5_0, DType::kQ5_1, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K};

// The shader-name part of each type (backends/vulkan/vk_dispatch.cpp).
std::string ShaderType(DType t) {
  std::string name = DTypeName(t);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

bool IsKQuant(DType t) {
  return GetDTypeInfo(t).block_elements == 256;
}

// Row widths of an odd number of blocks: 23 blocks of 32, or 3 super-blocks.
int64_t OddBlocksWidth(DType t) {
  return IsKQuant(t) ? 3 * 256 : 23 * 32;
}

void PutWeights(PlanHarness& h, uint32_t tensor, uint32_t seed) {
  const TensorRegion& t = h.plan.tensors[tensor];
  std::vector<uint8_t> b = RandomWeights(t.dtype, static_cast<uint64_t>(t.elements()), seed);
  std::memcpy(h.Data(tensor), b.data(), b.size());
}

TEST(VulkanQuantWeightsTest, EmbedEveryTypeBitExact) {
  for (DType type : kQuantTypes) {
    SCOPED_TRACE(DTypeName(type));
    const int64_t vocab = 11, width = OddBlocksWidth(type), chunk = 5;
    PlanHarness h(chunk);
    uint32_t table = h.Tensor(BufferId::kWeights, type, {vocab, width}, "table");
    uint32_t out = h.Tensor(BufferId::kArena, DType::kF32, {chunk, width}, "out");
    h.AddOp(OpKind::kEmbed, {table, h.plan.tokens_tensor}, {out}, OpParams{});
    h.Allocate();
    PutWeights(h, table, 1);
    int32_t ids[chunk] = {10, 0, 3, 7, 1};
    std::memcpy(h.Data(h.plan.tokens_tensor), ids, sizeof(ids));
    EXPECT_EQ(FirstShader(h, 0, "embed_"), "embed_" + ShaderType(type));
    RUN_OR_SKIP(r, h, {{4, 0}});
    ExpectClose(Values(h, r.cpu, out, 4), Values(h, r.gpu, out, 4), 0.0f, "embed");
  }
}

// How far two f32 evaluations of y = x · wᵀ may lie apart when they differ only in the order of
// their sums (and in whether a product is rounded before its addition, as with a fused
// multiply-add): each is within γ Σ|w_j x_j| of the exact sum, γ = (n + 1) u / (1 - (n + 1) u),
// u = 2⁻²⁴ (Higham, Accuracy and Stability of Numerical Algorithms, §3.1), so twice that. The
// weights are the same values on both sides: dequantization is bit-exact (the test above).
std::vector<float> SumOrderBounds(PlanHarness& h, uint32_t x, uint32_t w, int64_t rows) {
  const TensorRegion& wt = h.plan.tensors[w];
  const int64_t n_out = wt.shape[0], n_in = wt.shape[1];
  const uint64_t row_bytes = DTypeBytes(wt.dtype, static_cast<uint64_t>(n_in));
  const double u = std::ldexp(1.0, -24), n = static_cast<double>(n_in + 1);
  const double gamma = n * u / (1.0 - n * u);
  std::vector<float> values(static_cast<size_t>(n_in)), xs(static_cast<size_t>(rows * n_in));
  std::memcpy(xs.data(), h.Data(x), xs.size() * sizeof(float));
  std::vector<float> bounds(static_cast<size_t>(rows * n_out));
  for (int64_t o = 0; o < n_out; ++o) {
    cpu::DequantizeRow(wt.dtype, h.Data(w) + o * row_bytes, n_in, values.data());
    for (int64_t r = 0; r < rows; ++r) {
      double sum = 0.0;
      for (int64_t j = 0; j < n_in; ++j) sum += std::fabs(double(values[j]) * xs[r * n_in + j]);
      bounds[size_t(r * n_out + o)] = static_cast<float>(2.0 * gamma * sum);
    }
  }
  return bounds;
}

// x · wᵀ by the reference dot product (the values the CPU backend's product has).
std::vector<float> ReferenceProducts(PlanHarness& h, uint32_t x, uint32_t w, int64_t rows) {
  const TensorRegion& wt = h.plan.tensors[w];
  const int64_t n_out = wt.shape[0], n_in = wt.shape[1];
  const uint64_t row_bytes = DTypeBytes(wt.dtype, static_cast<uint64_t>(n_in));
  const float* xs = reinterpret_cast<const float*>(h.Data(x));
  std::vector<float> y(static_cast<size_t>(rows * n_out));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < n_out; ++o) {
      y[size_t(r * n_out + o)] =
          cpu::DotRow(wt.dtype, h.Data(w) + o * row_bytes, xs + r * n_in, n_in);
    }
  }
  return y;
}

void ExpectWithin(const std::vector<float>& want, const std::vector<float>& got,
                  const std::vector<float>& bounds, const char* what) {
  ASSERT_EQ(want.size(), got.size());
  int bad = 0;
  for (size_t i = 0; i < want.size() && bad < 5; ++i) {
    if (!(std::fabs(want[i] - got[i]) <= bounds[i])) {
      ADD_FAILURE() << what << "[" << i << "]: reference " << want[i] << ", vulkan " << got[i]
                    << ", bound " << bounds[i];
      ++bad;
    }
  }
}

struct MatMulCase {
  int style;
  int64_t n_in;
  int32_t chunk, n_tokens;
  bool aligned;  // weights 16-byte aligned (else 4 bytes past a 64-byte boundary)
};

// Whether a binding can start on a 16-byte boundary (the translation's default alignment) a
// whole number of `unit`-byte units before a tensor at byte `offset`: tried one boundary at a
// time from the tensor down to the buffer's start.
bool UnitBindingExists(uint64_t offset, uint64_t unit) {
  for (uint64_t b = offset - offset % 16;; b -= 16) {
    if ((offset - b) % unit == 0) return true;
    if (b < 16) return false;
  }
}

// The style the dispatcher picks for a product of `weights`: style 2 reads units of two
// 32-element blocks (Q5_0, Q5_1: 44 and 48 bytes), one super-block (Q4_K, Q5_K: 144 and 176)
// or two (Q6_K: 420), so it needs rows of whole units and, for each weight, a binding a whole
// number of units before it on a 16-byte boundary: the 48-, 144- and 176-byte units reach one
// only from a 16-byte aligned weight, the 420-byte one also from a weight 4 bytes past a
// 64-byte boundary when at least 420 bytes precede it. Otherwise style 0.
int ExpectedStyle(DType type, const MatMulCase& c, const PlanHarness& h,
                  std::initializer_list<uint32_t> weights) {
  if (c.style != 2) return c.style;
  const int64_t unit_elements = type == DType::kQ6_K ? 512 : (IsKQuant(type) ? 256 : 64);
  if (c.n_in % unit_elements != 0) return 0;
  const uint64_t unit_bytes = DTypeBytes(type, static_cast<uint64_t>(unit_elements));
  for (uint32_t w : weights) {
    if (!UnitBindingExists(h.plan.tensors[w].offset, unit_bytes)) return 0;
  }
  return 2;
}

// A weight of `type` after the previous tensors, 16-byte aligned when asked.
uint32_t Weight(PlanHarness& h, DType type, int64_t n_out, int64_t n_in, bool aligned,
                const char* name) {
  uint32_t w = h.Tensor(BufferId::kWeights, type, {n_out, n_in}, name);
  if (aligned) {
    TensorRegion& t = h.plan.tensors[w];
    t.offset += 12;
    h.plan.buffer_bytes[static_cast<int>(BufferId::kWeights)] = t.offset + t.bytes();
  }
  return w;
}

// One plan per case with the three fused forms, all reading x: y = x · wᵀ; gate/up with SiLU
// (yg = silu(x · gᵀ) · yu, yu = x · uᵀ); and acc += x · wrᵀ.
void RunMatMulCase(DType type, const MatMulCase& c) {
  const int64_t n_out = 67;  // not a whole number of 4-column invocations or subgroups
  PlanHarness h(c.chunk);
  uint32_t x = h.Tensor(BufferId::kArena, DType::kF32, {c.chunk, c.n_in}, "x");
  h.Tensor(BufferId::kWeights, DType::kF32, {64}, "room");  // room for a unit binding before
  uint32_t w = Weight(h, type, n_out, c.n_in, c.aligned, "w");
  uint32_t g = Weight(h, type, n_out, c.n_in, c.aligned, "gate");
  uint32_t u = Weight(h, type, n_out, c.n_in, c.aligned, "up");
  uint32_t wr = Weight(h, type, n_out, c.n_in, c.aligned, "wr");
  uint32_t y = h.Tensor(BufferId::kArena, DType::kF32, {c.chunk, n_out}, "y");
  uint32_t yg = h.Tensor(BufferId::kArena, DType::kF32, {c.chunk, n_out}, "yg");
  uint32_t yu = h.Tensor(BufferId::kArena, DType::kF32, {c.chunk, n_out}, "yu");
  uint32_t yr = h.Tensor(BufferId::kArena, DType::kF32, {c.chunk, n_out}, "yr");
  uint32_t acc = h.Tensor(BufferId::kArena, DType::kF32, {c.chunk, n_out}, "acc");
  h.AddOp(OpKind::kMatMul, {x, w}, {y}, OpParams{});
  OpParams gate_up;
  gate_up.n_weights = 2;
  gate_up.silu_mul = true;
  h.AddOp(OpKind::kMatMul, {x, g, u}, {yg, yu}, gate_up);
  OpParams residual;
  residual.accumulate = true;
  h.AddOp(OpKind::kMatMul, {x, wr}, {yr, acc}, residual);
  h.Allocate();
  uint32_t seed = 2;
  for (uint32_t t : {w, g, u, wr}) PutWeights(h, t, seed++);
  PutFloats(h, x, RandomFloats(size_t(c.chunk * c.n_in), 3));
  PutFloats(h, acc, RandomFloats(size_t(c.chunk * n_out), 4));

  const int styles[3] = {ExpectedStyle(type, c, h, {w}), ExpectedStyle(type, c, h, {g, u}),
                         ExpectedStyle(type, c, h, {wr})};
  std::vector<std::string> want;
  for (int mode : {0, 1, 2}) {
    want.push_back("matmul_" + ShaderType(type) + "_m" + std::to_string(mode) + "_s" +
                   std::to_string(styles[mode]) + (c.chunk == 1 ? "_r1" : "_r8"));
  }
  EXPECT_EQ(TranslatedShaders(h, c.style, "matmul_"), want);

  RUN_OR_SKIP(r, h, {{c.n_tokens, 0}}, c.style);
  const int64_t rows = c.n_tokens;
  std::vector<float> bound_y = SumOrderBounds(h, x, w, rows);
  ExpectWithin(Values(h, r.cpu, y, rows), Values(h, r.gpu, y, rows), bound_y, "y");
  std::vector<float> bound_u = SumOrderBounds(h, x, u, rows);
  std::vector<float> want_u = Values(h, r.cpu, yu, rows);
  ExpectWithin(want_u, Values(h, r.gpu, yu, rows), bound_u, "yu");
  // silu(g) · u from a gate and an up product each off by at most its bound: |silu'| < 1.1,
  // plus the last place errors of the device's exp (3 + 2|x| ulp in Vulkan's precision rules),
  // division (2.5), additions and products, taken as (10 + 2|g|) ulp of the result.
  std::vector<float> bound_g = SumOrderBounds(h, x, g, rows);
  std::vector<float> want_g = Values(h, r.cpu, yg, rows);
  std::vector<float> gate = ReferenceProducts(h, x, g, rows);
  std::vector<float> bound_gated(want_g.size());
  const double ulp = std::ldexp(1.0, -23);
  for (size_t i = 0; i < want_g.size(); ++i) {
    double gv = gate[i], silu = gv / (1.0 + std::exp(-gv));
    bound_gated[i] = static_cast<float>(1.1 * bound_g[i] * std::fabs(want_u[i]) +
                                        std::fabs(silu) * bound_u[i] + bound_g[i] * bound_u[i] +
                                        (10.0 + 2.0 * std::fabs(gv)) * ulp * std::fabs(want_g[i]));
  }
  ExpectWithin(want_g, Values(h, r.gpu, yg, rows), bound_gated, "yg");
  std::vector<float> bound_r = SumOrderBounds(h, x, wr, rows);
  ExpectWithin(Values(h, r.cpu, yr, rows), Values(h, r.gpu, yr, rows), bound_r, "yr");
  // acc + yr: the product's bound, plus one rounding of the sum on each side.
  std::vector<float> want_acc = Values(h, r.cpu, acc, rows);
  for (size_t i = 0; i < want_acc.size(); ++i) {
    bound_r[i] += static_cast<float>(std::ldexp(1.0, -23) * (std::fabs(want_acc[i]) + bound_r[i]));
  }
  ExpectWithin(want_acc, Values(h, r.gpu, acc, rows), bound_r, "acc");
}

// One test per type, so that ctest runs them side by side (lavapipe compiles each variant at its
// first dispatch, which is most of the time here).
class VulkanQuantMatMulTest : public ::testing::TestWithParam<DType> {};

TEST_P(VulkanQuantMatMulTest, EveryFormStyleAndRowTile) {
  const DType type = GetParam();
  const int64_t odd = OddBlocksWidth(type);
  const int64_t even = IsKQuant(type) ? 4 * 256 : 24 * 32;
  const MatMulCase cases[] = {
      {0, odd, 11, 9, false}, {1, odd, 11, 9, false}, {2, odd, 11, 9, true}, {0, odd, 1, 1, false},
      {1, odd, 1, 1, false},  {2, even, 11, 9, true}, {2, even, 1, 1, true}, {2, even, 1, 1, false},
  };
  for (const MatMulCase& c : cases) {
    SCOPED_TRACE(std::string(DTypeName(type)) + " style " + std::to_string(c.style) + " n_in " +
                 std::to_string(c.n_in) + " chunk " + std::to_string(c.chunk) +
                 (c.aligned ? " aligned" : ""));
    RunMatMulCase(type, c);
    if (HasFatalFailure() || IsSkipped()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(QuantTypes, VulkanQuantMatMulTest, ::testing::ValuesIn(kQuantTypes),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(DTypeName(info.param));
                         });

#else

TEST(VulkanQuantWeightsTest, BuiltWithoutVulkan) {
  GTEST_SKIP() << "built without the Vulkan backend";
}

#endif

}  // namespace
}  // namespace staticlm::vktest
