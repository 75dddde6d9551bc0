// The fast matmul kernels against ref::MatMul, for every ISA this build and CPU can run, every
// weight type and awkward sizes. Three kinds of check:
//  - exact data (dyadic values whose every partial sum is representable): any summation order
//    gives the exact result, so the kernels must match the reference bit for bit; this is what
//    catches an indexing or decoding mistake, however small;
//  - random data (quantized N(0, 0.05) weights, N(0, 1) activations): within the worst-case
//    f32 reassociation bound;
//  - determinism: a row's bits do not depend on the batch it came in, nor on n_out or the
//    output range (what lets a thread pool split the work);
//  - the Q5 types and the K-quants really run on tiles in every SIMD kernel (not on the
//    reference fallback).
#include "backends/cpu/fast_matmul.h"

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/dequantize.h"
#include "backends/cpu/half.h"
#include "backends/cpu/reference_kernels.h"
#include "tests/support/weight_encoding.h"
#include "tests/vulkan_test_support.h"  // RandomWeights: valid blocks of every weight type

namespace staticlm::cpu {
namespace {

const DType kTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ8_0,
                        DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1,
                        DType::kQ4_K, DType::kQ5_K, DType::kQ6_K};
const MatMulIsa kIsas[] = {MatMulIsa::kReference, MatMulIsa::kAvx2, MatMulIsa::kAvx512,
                           MatMulIsa::kNeon};

// Tiles are up to 8 outputs × 4 rows, and block scales are read 8 or 16 units of 32 at a time
// (one or two K-quant super-blocks): the sizes leave every remainder of those.
const int64_t kOutputs[] = {1, 3, 6, 13, 17, 33, 100};
const int64_t kRows[] = {1, 2, 3, 5, 8, 13};
const int64_t kQuantizedInputs[] = {32, 64, 96, 544, 576, 1536};
const int64_t kSuperBlockInputs[] = {256, 512, 768, 1536};
// Plain types also get widths that leave a partial vector (8 and 16 lanes) or are tiny.
const int64_t kPlainInputs[] = {1, 7, 16, 45, 64, 96, 576, 1536};

bool IsQuantized(DType t) {
  return GetDTypeInfo(t).block_elements > 1;
}

bool IsKQuant(DType t) {
  return GetDTypeInfo(t).block_elements == 256;
}

std::vector<int64_t> InputWidths(DType t) {
  if (IsKQuant(t)) return {std::begin(kSuperBlockInputs), std::end(kSuperBlockInputs)};
  if (IsQuantized(t)) return {std::begin(kQuantizedInputs), std::end(kQuantizedInputs)};
  return {std::begin(kPlainInputs), std::end(kPlainInputs)};
}

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof(b));
  return b;
}

// Random weights: N(0, 0.05) floats quantized into valid blocks by the test support encoder;
// for the types it cannot encode (Q5, K-quants), random quants under random finite scales.
std::vector<uint8_t> RandomWeights(DType type, int64_t n_out, int64_t n_in, uint32_t seed) {
  if (type == DType::kQ5_0 || type == DType::kQ5_1 || IsKQuant(type)) {
    return vktest::RandomWeights(type, static_cast<uint64_t>(n_out * n_in), seed);
  }
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 0.05f);
  std::vector<float> values(static_cast<size_t>(n_out * n_in));
  for (float& v : values) v = dist(rng);
  return test::EncodeFloats(type, values);
}

std::vector<float> RandomActivations(int64_t rows, int64_t n_in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(rows * n_in));
  for (float& v : x) v = dist(rng);
  return x;
}

void Put16(uint8_t* p, uint16_t v) {
  std::memcpy(p, &v, sizeof(v));
}

// Exact weights: every weight is an integer k (|k| ≤ 127) times 2^-5 or 2^-6, built directly
// as blocks with power-of-two scales. With activations j · 2^-3 (|j| ≤ 8) every product is a
// multiple of 2^-9 below 2^2, so sums of up to 1536 of them stay below 2^24 units of 2^-9:
// exact in f32 whatever the order.
std::vector<uint8_t> ExactWeights(DType type, int64_t n_out, int64_t n_in, uint32_t seed);

// Exact Q5 and K-quant blocks (see ExactWeights): every weight is a multiple of 2^-10 of
// magnitude at most 1, so with those activations every product is a multiple of 2^-13 of
// magnitude at most 1, and sums of up to 1536 of them are exact in f32 whatever the order.
//  - Q5_0, Q5_1: d = ±2^-6 or ±2^-7, q ≤ 31 (Q5_1: m = |d| · k, −15 ≤ k ≤ 0);
//  - Q4_K: d, dmin = ±2^-10, any 6-bit sc and m: |sc · q| + m ≤ 63 · 15 + 63 < 2^10;
//  - Q5_K: the same with sc ≤ 31: 31 · 31 + 63 ≤ 2^10;
//  - Q6_K: d = ±2^-10, |scale| ≤ 31: 31 · 32 < 2^10.
void FillExactBlock(DType type, uint8_t* block, std::mt19937& rng) {
  auto uniform = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto sign = [&]() { return uniform(0, 1) ? 1.0f : -1.0f; };
  DTypeInfo info = GetDTypeInfo(type);
  for (uint32_t i = 0; i < info.block_bytes; ++i) block[i] = static_cast<uint8_t>(uniform(0, 255));
  const float k_scale = std::ldexp(1.0f, -10);
  switch (type) {
    case DType::kQ5_0:
    case DType::kQ5_1: {
      const float d = sign() * std::ldexp(1.0f, -uniform(6, 7));
      Put16(block, FloatToHalf(d));
      if (type == DType::kQ5_1) Put16(block + 2, FloatToHalf(std::fabs(d) * uniform(-15, 0)));
      return;
    }
    case DType::kQ4_K:
    case DType::kQ5_K:
      Put16(block, FloatToHalf(sign() * k_scale));
      Put16(block + 2, FloatToHalf(sign() * k_scale));
      // Bytes 0-3 of scales[] hold bit 5 of sc[s] (their bit 5) and of sc[s + 4] (bit 7).
      if (type == DType::kQ5_K) {
        for (int s = 0; s < 4; ++s) block[4 + s] &= 0x5f;
      }
      return;
    case DType::kQ6_K:
      for (int s = 0; s < 16; ++s) block[192 + s] = static_cast<uint8_t>(uniform(-31, 31));
      Put16(block + 208, FloatToHalf(sign() * k_scale));
      return;
    default:
      FAIL() << "no exact blocks for " << DTypeName(type);
  }
}

std::vector<uint8_t> ExactWeights(DType type, int64_t n_out, int64_t n_in, uint32_t seed) {
  std::mt19937 rng(seed);
  auto uniform = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto scale = [&]() { return std::ldexp(uniform(0, 1) ? 1.0f : -1.0f, -uniform(5, 6)); };
  const int64_t n = n_out * n_in;
  if (!IsQuantized(type)) {
    std::vector<float> values(static_cast<size_t>(n));
    for (float& v : values) v = static_cast<float>(uniform(-127, 127)) * std::ldexp(1.0f, -6);
    return test::EncodeFloats(type, values);  // exact in F16 and BF16 too (≤ 8 bits)
  }
  DTypeInfo info = GetDTypeInfo(type);
  std::vector<uint8_t> bytes(DTypeBytes(type, static_cast<uint64_t>(n)));
  for (int64_t b = 0; b < n / info.block_elements; ++b) {
    uint8_t* block = bytes.data() + b * info.block_bytes;
    if (type != DType::kQ8_0 && type != DType::kQ4_0 && type != DType::kQ4_1) {
      FillExactBlock(type, block, rng);
      continue;
    }
    float d = scale();
    Put16(block, FloatToHalf(d));
    if (type == DType::kQ8_0) {
      for (int j = 0; j < 32; ++j) block[2 + j] = static_cast<uint8_t>(uniform(-127, 127));
      continue;
    }
    uint8_t* qs = block + (type == DType::kQ4_1 ? 4 : 2);
    if (type == DType::kQ4_1) Put16(block + 2, FloatToHalf(std::fabs(d) * uniform(-15, 0)));
    for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>(uniform(0, 255));
  }
  return bytes;
}

std::vector<float> ExactActivations(int64_t rows, int64_t n_in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-8, 8);
  std::vector<float> x(static_cast<size_t>(rows * n_in));
  for (float& v : x) v = static_cast<float>(dist(rng)) * 0.125f;
  return x;
}

struct Problem {
  DType type;
  int64_t n_out, n_in, rows;
  std::vector<uint8_t> w;
  std::vector<float> x;
};

std::vector<float> Reference(const Problem& p) {
  std::vector<float> y(static_cast<size_t>(p.rows * p.n_out));
  ref::MatMul(p.type, p.w.data(), p.n_out, p.n_in, p.x.data(), p.rows, y.data());
  return y;
}

std::vector<float> Compute(MatMulFn fn, const Problem& p) {
  std::vector<float> y(static_cast<size_t>(p.rows * p.n_out), std::nanf(""));
  fn(p.type, p.w.data(), p.n_out, p.n_in, p.x.data(), p.rows, y.data());
  return y;
}

// Σ |w·x| of one output, the scale of its rounding error.
double AbsDot(const Problem& p, int64_t r, int64_t o) {
  std::vector<float> row(static_cast<size_t>(p.n_in));
  uint64_t row_bytes = DTypeBytes(p.type, static_cast<uint64_t>(p.n_in));
  DequantizeRow(p.type, p.w.data() + o * row_bytes, p.n_in, row.data());
  double sum = 0;
  for (int64_t i = 0; i < p.n_in; ++i) sum += std::fabs(double(row[i]) * p.x[r * p.n_in + i]);
  return sum;
}

// Σ w·x in double precision: exact for the data of ExactWeights/ExactActivations.
double ExactDot(const Problem& p, int64_t r, int64_t o) {
  std::vector<float> row(static_cast<size_t>(p.n_in));
  uint64_t row_bytes = DTypeBytes(p.type, static_cast<uint64_t>(p.n_in));
  DequantizeRow(p.type, p.w.data() + o * row_bytes, p.n_in, row.data());
  double sum = 0;
  for (int64_t i = 0; i < p.n_in; ++i) sum += double(row[i]) * p.x[r * p.n_in + i];
  return sum;
}

std::string Describe(const Problem& p) {
  return std::string(DTypeName(p.type)) + " n_out=" + std::to_string(p.n_out) +
         " n_in=" + std::to_string(p.n_in) + " rows=" + std::to_string(p.rows);
}

class FastMatMulTest : public ::testing::TestWithParam<std::tuple<MatMulIsa, DType>> {
 protected:
  void SetUp() override {
    isa_ = std::get<0>(GetParam());
    type_ = std::get<1>(GetParam());
    fn_ = MatMulFor(isa_);
    range_fn_ = MatMulRangeFor(isa_);
    if (fn_ == nullptr || range_fn_ == nullptr) {
      GTEST_SKIP() << MatMulIsaName(isa_) << " is not compiled into this build";
    }
    if (!IsaSupported(isa_, DetectCpuFeatures())) {
      GTEST_SKIP() << MatMulIsaName(isa_) << " is not supported by this CPU ("
                   << DescribeCpuFeatures(DetectCpuFeatures()) << ")";
    }
  }

  MatMulIsa isa_ = MatMulIsa::kReference;
  DType type_ = DType::kF32;
  MatMulFn fn_ = nullptr;
  MatMulRangeFn range_fn_ = nullptr;
};

TEST_P(FastMatMulTest, ExactDataMatchesReferenceBitForBit) {
  uint32_t seed = 1;
  for (int64_t n_out : kOutputs) {
    for (int64_t n_in : InputWidths(type_)) {
      for (int64_t rows : kRows) {
        ++seed;
        Problem p{type_,
                  n_out,
                  n_in,
                  rows,
                  ExactWeights(type_, n_out, n_in, seed),
                  ExactActivations(rows, n_in, seed + 1000)};
        std::vector<float> want = Reference(p);
        std::vector<float> got = Compute(fn_, p);
        for (size_t i = 0; i < want.size(); ++i) {
          // The data are built so that the reference itself is exact: check that first.
          double exact =
              ExactDot(p, static_cast<int64_t>(i) / n_out, static_cast<int64_t>(i) % n_out);
          ASSERT_EQ(double(want[i]), exact) << Describe(p) << ": test data are not exact";
          if (Bits(got[i]) != Bits(want[i])) {
            FAIL() << Describe(p) << ": output (" << i / n_out << ", " << i % n_out << ") is "
                   << got[i] << ", reference " << want[i];
          }
        }
      }
    }
  }
}

// With one-hot activations each output is a single weight times 1, so the result is the
// decoded weight itself: the kernels must decode every weight of realistic (inexact) blocks to
// the reference's value, bit for bit (e.g. no fused multiply-add where it rounds twice).
TEST_P(FastMatMulTest, DecodesWeightsExactlyAsTheReference) {
  const std::vector<int64_t> widths =
      IsKQuant(type_) ? std::vector<int64_t>{256, 512} : std::vector<int64_t>{64, 96};
  for (int64_t n_in : widths) {
    const int64_t n_out = 13, rows = n_in;
    Problem p{type_,
              n_out,
              n_in,
              rows,
              RandomWeights(type_, n_out, n_in, 31),
              std::vector<float>(static_cast<size_t>(rows * n_in), 0.0f)};
    for (int64_t r = 0; r < rows; ++r) p.x[r * n_in + r] = 1.0f;
    std::vector<float> want = Reference(p);
    std::vector<float> got = Compute(fn_, p);
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(Bits(got[i]), Bits(want[i]))
          << Describe(p) << ": weight (" << i % n_out << ", " << i / n_out << ") decodes to "
          << got[i] << ", reference " << want[i];
    }
  }
}

// The reference sums n products one after another: |error| ≤ γ(n)·Σ|w·x|, γ(k) ≈ k·2^-24
// (products are exact in the fast kernels' FMAs, and weights decode to the same values).
// A fast kernel sums n/lanes products per lane, then log2(lanes) ≤ 4 pairwise levels:
// ≤ γ(n/8 + 1 + 4)·Σ|w·x| for 8 or 16 lanes. Two results each within their bound differ
// by at most the sum of the two; that is the tolerance (≈ 1.1e-4 relative at n = 1536, the
// worst case; typical differences are ~100× smaller).
TEST_P(FastMatMulTest, RandomDataWithinReassociationBound) {
  uint32_t seed = 7;
  for (int64_t n_out : kOutputs) {
    for (int64_t n_in : InputWidths(type_)) {
      for (int64_t rows : kRows) {
        ++seed;
        Problem p{type_,
                  n_out,
                  n_in,
                  rows,
                  RandomWeights(type_, n_out, n_in, seed),
                  RandomActivations(rows, n_in, seed + 1000)};
        std::vector<float> want = Reference(p);
        std::vector<float> got = Compute(fn_, p);
        const double u = std::ldexp(1.0, -24);
        const double terms = double(n_in) + double(n_in / 8 + 1 + 4);
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t o = 0; o < n_out; ++o) {
            double tolerance = terms * u * AbsDot(p, r, o) * 1.01;
            double diff = std::fabs(double(got[r * n_out + o]) - want[r * n_out + o]);
            if (!(diff <= tolerance)) {
              FAIL() << Describe(p) << ": output (" << r << ", " << o << ") is "
                     << got[r * n_out + o] << ", reference " << want[r * n_out + o]
                     << ", difference " << diff << " > " << tolerance;
            }
          }
        }
      }
    }
  }
}

// A row computed alone, in a batch of 13, or as part of an output slice gives the same bits.
TEST_P(FastMatMulTest, ResultsDoNotDependOnBatchOrOutputSlice) {
  for (int64_t n_in : InputWidths(type_)) {
    const int64_t n_out = 33, rows = 13;
    Problem p{type_,
              n_out,
              n_in,
              rows,
              RandomWeights(type_, n_out, n_in, 99),
              RandomActivations(rows, n_in, 98)};
    std::vector<float> batch = Compute(fn_, p);
    uint64_t row_bytes = DTypeBytes(type_, static_cast<uint64_t>(n_in));
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<float> alone(n_out);
      fn_(type_, p.w.data(), n_out, n_in, p.x.data() + r * n_in, 1, alone.data());
      for (int64_t o = 0; o < n_out; ++o) {
        ASSERT_EQ(Bits(alone[o]), Bits(batch[r * n_out + o]))
            << Describe(p) << ": row " << r << " alone differs at output " << o;
      }
    }
    // Outputs 5..11 as their own matrix (weights from row 5, n_out = 7), all rows at once.
    const int64_t first = 5, count = 7;
    std::vector<float> slice(rows * count);
    fn_(type_, p.w.data() + first * row_bytes, count, n_in, p.x.data(), rows, slice.data());
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t o = 0; o < count; ++o) {
        ASSERT_EQ(Bits(slice[r * count + o]), Bits(batch[r * n_out + first + o]))
            << Describe(p) << ": slice differs at row " << r << ", output " << first + o;
      }
    }
  }
}

// The range entry point writes exactly its outputs of every row, with the full call's bits.
TEST_P(FastMatMulTest, RangeWritesOnlyItsOutputs) {
  const int64_t n_out = 17, rows = 5, n_in = IsKQuant(type_) ? 768 : IsQuantized(type_) ? 96 : 45;
  Problem p{type_,
            n_out,
            n_in,
            rows,
            RandomWeights(type_, n_out, n_in, 5),
            RandomActivations(rows, n_in, 6)};
  std::vector<float> full = Compute(fn_, p);
  const float kUntouched = -12345.0f;
  const int64_t splits[][2] = {{0, 17}, {0, 1}, {3, 10}, {16, 17}, {6, 6}};
  for (const auto& split : splits) {
    std::vector<float> y(rows * n_out, kUntouched);
    range_fn_(type_, p.w.data(), n_out, n_in, p.x.data(), rows, y.data(), split[0], split[1]);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t o = 0; o < n_out; ++o) {
        bool inside = o >= split[0] && o < split[1];
        float want = inside ? full[r * n_out + o] : kUntouched;
        ASSERT_EQ(Bits(y[r * n_out + o]), Bits(want))
            << Describe(p) << ": range [" << split[0] << ", " << split[1] << ") at row " << r
            << ", output " << o;
      }
    }
  }
}

std::string ParamName(const ::testing::TestParamInfo<std::tuple<MatMulIsa, DType>>& info) {
  return std::string(MatMulIsaName(std::get<0>(info.param))) + "_" +
         DTypeName(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(AllIsasAndTypes, FastMatMulTest,
                         ::testing::Combine(::testing::ValuesIn(kIsas),
                                            ::testing::ValuesIn(kTypes)),
                         ParamName);

// The Q5 types and the K-quants run on each SIMD ISA's tiles, not on the reference fallback
// (DotRow), whose bits would equal ref::MatMul's everywhere: on random data the tiles' other
// summation order must show in some output's last bits. (The suite above checks the values.)
TEST(FastMatMulTilesTest, Q5AndKQuantTypesRunOnTiles) {
  const DType types[] = {DType::kQ5_0, DType::kQ5_1, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K};
  const int64_t n_out = 13, n_in = 1536;
  for (MatMulIsa isa : {MatMulIsa::kAvx2, MatMulIsa::kAvx512, MatMulIsa::kNeon}) {
    MatMulFn fn = MatMulFor(isa);
    if (fn == nullptr || !IsaSupported(isa, DetectCpuFeatures())) continue;
    for (DType type : types) {
      for (int64_t rows : {int64_t{1}, int64_t{5}}) {
        Problem p{type,
                  n_out,
                  n_in,
                  rows,
                  RandomWeights(type, n_out, n_in, 21),
                  RandomActivations(rows, n_in, 22)};
        std::vector<float> want = Reference(p), got = Compute(fn, p);
        int differ = 0;
        for (size_t i = 0; i < want.size(); ++i) differ += Bits(got[i]) != Bits(want[i]);
        EXPECT_GT(differ, 0) << MatMulIsaName(isa) << " " << Describe(p)
                             << ": every output has the reference's bits (the fallback?)";
      }
    }
  }
}

TEST(SelectMatMulTest, PicksTheBestIsaTheFeaturesAllow) {
  MatMulIsa chosen = MatMulIsa::kAvx512;
  EXPECT_EQ(SelectMatMul(CpuFeatures{}, &chosen), MatMulFor(MatMulIsa::kReference));
  EXPECT_EQ(chosen, MatMulIsa::kReference);

  CpuFeatures avx2{};
  avx2.avx2 = avx2.fma = avx2.f16c = true;
  CpuFeatures avx512 = avx2;
  avx512.avx512f = avx512.avx512bw = avx512.avx512vl = true;
  CpuFeatures avx512_without_bw = avx512;
  avx512_without_bw.avx512bw = false;
  const bool x86 = MatMulFor(MatMulIsa::kAvx2) != nullptr;
  SelectMatMul(avx2, &chosen);
  EXPECT_EQ(chosen, x86 ? MatMulIsa::kAvx2 : MatMulIsa::kReference);
  SelectMatMul(avx512, &chosen);
  EXPECT_EQ(chosen, x86 ? MatMulIsa::kAvx512 : MatMulIsa::kReference);
  SelectMatMul(avx512_without_bw, &chosen);
  EXPECT_EQ(chosen, x86 ? MatMulIsa::kAvx2 : MatMulIsa::kReference);
  CpuFeatures avx2_without_fma = avx2;
  avx2_without_fma.fma = false;
  SelectMatMul(avx2_without_fma, &chosen);
  EXPECT_EQ(chosen, MatMulIsa::kReference);

  CpuFeatures neon{};
  neon.neon = true;
  const bool arm64 = MatMulFor(MatMulIsa::kNeon) != nullptr;
  SelectMatMul(neon, &chosen);
  EXPECT_EQ(chosen, arm64 ? MatMulIsa::kNeon : MatMulIsa::kReference);
}

TEST(SelectMatMulTest, ChoiceOnThisMachineRuns) {
  CpuFeatures features = DetectCpuFeatures();
  MatMulIsa chosen = MatMulIsa::kReference;
  MatMulFn fn = SelectMatMul(features, &chosen);
  ASSERT_NE(fn, nullptr);
  EXPECT_TRUE(IsaSupported(chosen, features));
  std::printf("cpu: %s; matmul: %s\n", DescribeCpuFeatures(features), MatMulIsaName(chosen));
  Problem p{
      DType::kQ4_1, 3, 64, 2, ExactWeights(DType::kQ4_1, 3, 64, 3), ExactActivations(2, 64, 4)};
  EXPECT_EQ(Compute(fn, p), Reference(p));
}

TEST(SelectMatMulTest, IsaNames) {
  EXPECT_STREQ(MatMulIsaName(MatMulIsa::kReference), "reference");
  EXPECT_STREQ(MatMulIsaName(MatMulIsa::kAvx2), "avx2");
  EXPECT_STREQ(MatMulIsaName(MatMulIsa::kAvx512), "avx512");
  EXPECT_STREQ(MatMulIsaName(MatMulIsa::kNeon), "neon");
}

}  // namespace
}  // namespace staticlm::cpu
