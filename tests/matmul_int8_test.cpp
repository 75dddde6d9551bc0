// The integer-activation products (backends/cpu/matmul_int8.h), int8 and int16 activations.
// Three kinds of check:
//  - the reference computes the stated arithmetic: its quantizer keeps every value within half
//    a step, and its products equal a double-precision evaluation of the same quantized sums
//    within the f32 rounding bound, and stay within the quantization bound of the f32 product;
//  - every SIMD implementation this CPU runs matches the reference bit for bit (quantizer and
//    product), for all seven weight types (Q6_K with int8 activations only), rows 1..9 and column
//    counts that leave every remainder of the 16-column groups, on random weight bytes (every
//    nibble and int8 value, -128 included) and on realistic quantized weights;
//  - output ranges: a range call writes exactly its columns, with the bits of the full call.
#include "backends/cpu/matmul_int8.h"

#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/dequantize.h"
#include "backends/cpu/half.h"
#include "backends/cpu/reference_kernels.h"
#include "tests/support/weight_encoding.h"

namespace staticlm::cpu {
namespace {

const DType kTypes[] = {DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1,
                        DType::kQ8_0, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K};

// Q4_K and Q5_K: an f16 dmin after d, as Q4_1's m.
bool HasMin(DType type) {
  return type == DType::kQ4_1 || type == DType::kQ5_1 || type == DType::kQ4_K ||
         type == DType::kQ5_K;
}

// Where the f16 d of a block of `type` starts: first, except Q6_K's, which ends its block.
size_t DOffset(DType type) {
  return type == DType::kQ6_K ? 208 : 0;
}

// Whether rows of n_in values of `type` exist (K-quants: whole super-blocks of 256).
bool Fits(DType type, int64_t n_in) {
  return n_in % GetDTypeInfo(type).block_elements == 0;
}
const int64_t kOutputs[] = {1, 5, 15, 16, 17, 31, 33, 70};
const int64_t kInputs[] = {32, 96, 256, 576, 768, 1536};
const int kBits[] = {8, 16};

int QMax(int bits) {
  return bits == 16 ? 32767 : 127;
}

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof(b));
  return b;
}

// Activations with the awkward cases mixed in: a zero block, a block of tiny (subnormal)
// values, a block scaled up by 1000, exact ties (k + 0.5 steps) and one outlier per block.
std::vector<float> Activations(int64_t rows, int64_t n_in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(rows * n_in));
  for (float& v : x) v = dist(rng);
  const int64_t blocks = rows * n_in / kQuantBlock;
  for (int64_t b = 0; b < blocks; ++b) {
    float* xb = &x[static_cast<size_t>(b * kQuantBlock)];
    switch (b % 6) {
      case 1:
        for (int i = 0; i < kQuantBlock; ++i) xb[i] = 0.0f;
        break;
      case 2:
        for (int i = 0; i < kQuantBlock; ++i) xb[i] *= 1e-40f;
        break;
      case 3:
        for (int i = 0; i < kQuantBlock; ++i) xb[i] *= 1000.0f;
        break;
      case 4:  // amax 127: x = k + 0.5 rounds to the even neighbour
        for (int i = 0; i < kQuantBlock; ++i) xb[i] = static_cast<float>(i % 9) - 3.5f;
        xb[7] = -127.0f;
        break;
      case 5:
        xb[static_cast<size_t>(b) % kQuantBlock] = 40.0f;
        break;
      default:
        break;
    }
  }
  return x;
}

// Random block bytes (every nibble and int8 value) with finite f16 scales of either sign;
// one block in 7 has a zero or subnormal scale.
std::vector<uint8_t> RandomBlocks(DType type, int64_t n_out, int64_t n_in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> scale(-0.02f, 0.02f);
  const DTypeInfo info = GetDTypeInfo(type);
  std::vector<uint8_t> w(DTypeBytes(type, static_cast<uint64_t>(n_out * n_in)));
  for (uint8_t& b : w) b = static_cast<uint8_t>(rng());
  for (size_t b = 0; b < w.size() / info.block_bytes; ++b) {
    uint8_t* block = &w[b * info.block_bytes];
    uint16_t d = FloatToHalf(scale(rng));
    if (b % 7 == 3) d = static_cast<uint16_t>(b % 2 == 0 ? 0 : 0x0003);  // zero, subnormal
    uint16_t m = FloatToHalf(5.0f * scale(rng));
    std::memcpy(block + DOffset(type), &d, 2);
    if (HasMin(type)) std::memcpy(block + 2, &m, 2);
  }
  return w;
}

std::vector<uint8_t> RealisticWeights(DType type, int64_t n_out, int64_t n_in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 0.05f);
  std::vector<float> values(static_cast<size_t>(n_out * n_in));
  for (float& v : values) v = dist(rng);
  std::vector<uint8_t> encoded = test::EncodeFloats(type, values);
  // The test encoder has no Q5 quantizer; any Q5 bytes are valid weights, so random blocks
  // (every 5-bit value) stand in for them.
  if (encoded.empty()) return RandomBlocks(type, n_out, n_in, seed);
  return encoded;
}

// Quantized rows; q holds the integers widened to int32 for checking.
struct Quantized {
  std::vector<int16_t> storage;
  std::vector<int32_t> q;
  std::vector<float> d;
  std::vector<int32_t> sum;
  QuantizedActivations view;
};

Quantized Quantize(const IntKernels& k, const std::vector<float>& x, int64_t rows, int64_t n_in) {
  Quantized z;
  z.storage.assign(x.size(), 99);
  z.d.assign(x.size() / kQuantBlock, -1.0f);
  z.sum.assign(x.size() / kQuantBlock, -1);
  k.quantize(x.data(), rows, n_in, z.storage.data(), z.d.data(), z.sum.data());
  for (size_t i = 0; i < x.size(); ++i) {
    z.q.push_back(k.bits == 16 ? z.storage[i]
                               : reinterpret_cast<const int8_t*>(z.storage.data())[i]);
  }
  z.view = {z.storage.data(), z.d.data(), z.sum.data(), rows, n_in, k.bits};
  return z;
}

IntKernels Reference(int bits) {
  return IntKernelsFor(IntIsa::kReference, bits);
}

// Q4_K's (five false) or Q5_K's (five true) 32-value sub-block b % 8 of super-block b / 8, from
// ggml's layout: 6-bit scale and min j in scales[j] and scales[j + 4] (j < 4), else split over
// scales[j + 4] and the top bits of scales[j − 4] and scales[j]; the nibbles of sub-blocks 2i
// and 2i + 1 share 32 bytes; Q5_K's qh[32] comes before them, bit j of qh[i] being bit 4 of
// value i of sub-block j.
void KQuantMinBlockValues(bool five, const uint8_t* row, int64_t b, double* dw, double* m,
                          int wq[32]) {
  const uint8_t* block = row + (b / 8) * (five ? 176 : 144);
  const int j = static_cast<int>(b % 8);
  const uint8_t* q = block + 4;
  const int sc = j < 4 ? q[j] & 63 : (q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4);
  const int mn = j < 4 ? q[j + 4] & 63 : (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  uint16_t h = 0;
  std::memcpy(&h, block, 2);
  *dw = HalfToFloat(h) * double(sc);
  std::memcpy(&h, block + 2, 2);
  *m = -HalfToFloat(h) * double(mn);
  const uint8_t* qs = block + (five ? 48 : 16);
  for (int i = 0; i < 32; ++i) {
    wq[i] = (qs[32 * (j / 2) + i] >> (4 * (j % 2))) & 0x0f;
    if (five) wq[i] |= ((block[16 + i] >> j) & 1) << 4;
  }
}

// Q6_K's elements 32j ... 32j + 31 (j = b % 8) of super-block b / 8, from ggml's layout: half
// h = j / 4 of 128 elements, run k = j % 4 of 32 in it; the low 4 bits in the low (k < 2) or
// high nibbles of ql[64h + 32 (k % 2) ...], bits 4-5 in bits 2k, 2k + 1 of qh[32h ...], and the
// int8 scale 8h + 2k + i / 16. wq carries the scale (sc · (q6 − 32)), so that dw = d.
void Q6KBlockValues(const uint8_t* row, int64_t b, double* dw, double* m, int wq[32]) {
  const uint8_t* block = row + (b / 8) * 210;
  const int j = static_cast<int>(b % 8), h = j / 4, k = j % 4;
  for (int i = 0; i < 32; ++i) {
    const int low = (block[64 * h + 32 * (k % 2) + i] >> (4 * (k / 2))) & 0x0f;
    const int high = (block[128 + 32 * h + i] >> (2 * k)) & 3;
    const int sc = static_cast<int8_t>(block[192 + 8 * h + 2 * k + i / 16]);
    wq[i] = sc * ((low | (high << 4)) - 32);
  }
  uint16_t d = 0;
  std::memcpy(&d, block + 208, 2);
  *dw = HalfToFloat(d);
  *m = 0.0;
}

// The scales and exact integer weights of block b, decoded independently of the kernels.
void BlockValues(DType type, const uint8_t* row, int64_t b, double* dw, double* m, int wq[32]) {
  if (type == DType::kQ4_K) return KQuantMinBlockValues(false, row, b, dw, m, wq);
  if (type == DType::kQ5_K) return KQuantMinBlockValues(true, row, b, dw, m, wq);
  if (type == DType::kQ6_K) return Q6KBlockValues(row, b, dw, m, wq);
  const size_t bytes = GetDTypeInfo(type).block_bytes;
  const uint8_t* block = row + b * bytes;
  uint16_t h = 0;
  std::memcpy(&h, block, 2);
  *dw = HalfToFloat(h);
  *m = 0.0;
  if (HasMin(type)) {
    std::memcpy(&h, block + 2, 2);
    *m = HalfToFloat(h);
  }
  const bool five = type == DType::kQ5_0 || type == DType::kQ5_1;
  const uint8_t* qh = block + (HasMin(type) ? 4 : 2);  // Q5: bit i of these 4 bytes
  for (int i = 0; i < 32; ++i) {
    if (type == DType::kQ8_0) {
      wq[i] = static_cast<int8_t>(block[2 + i]);
    } else {
      const uint8_t* qs = qh + (five ? 4 : 0);
      const int nibble = i < 16 ? qs[i] & 0x0f : qs[i - 16] >> 4;
      const int high = five ? ((qh[i / 8] >> (i % 8)) & 1) << 4 : 0;
      const int offset = type == DType::kQ4_0 ? 8 : type == DType::kQ5_0 ? 16 : 0;
      wq[i] = (nibble | high) - offset;
    }
  }
}

TEST(MatMulInt8Test, ReferenceQuantizerKeepsEveryValueWithinHalfAStep) {
  for (int bits : kBits) {
    SCOPED_TRACE(bits);
    const int64_t rows = 3, n_in = 1536;
    const float qmax_f = static_cast<float>(QMax(bits));
    std::vector<float> x = Activations(rows, n_in, 7);
    Quantized z = Quantize(Reference(bits), x, rows, n_in);
    int zero_blocks = 0;
    for (size_t b = 0; b < z.d.size(); ++b) {
      float amax = 0.0f;
      int32_t sum = 0, qmax = 0;
      for (int i = 0; i < kQuantBlock; ++i) {
        const size_t k = b * kQuantBlock + i;
        amax = std::max(amax, std::fabs(x[k]));
        sum += z.q[k];
        qmax = std::max(qmax, std::abs(static_cast<int32_t>(z.q[k])));
        // x ≈ d·q within half a step, plus the roundings of 1/d and x·(1/d) (each ≤ 2⁻²⁴
        // relative to |x|, i.e. 0.002 steps for int16), checked in double.
        const double step_error = std::fabs(double(x[k]) - double(z.d[b]) * z.q[k]);
        EXPECT_LE(step_error, 0.5 * z.d[b] + std::ldexp(std::fabs(double(x[k])), -22) + 1e-37)
            << "block " << b << " element " << i;
      }
      EXPECT_EQ(z.sum[b], sum) << "block " << b;
      if (amax / qmax_f >= FLT_MIN) {
        EXPECT_EQ(z.d[b], amax / qmax_f) << "block " << b;
        EXPECT_EQ(qmax, QMax(bits)) << "block " << b;  // the largest value maps to ±Q
      } else {
        EXPECT_EQ(z.d[b], 0.0f);
        EXPECT_EQ(qmax, 0);
        ++zero_blocks;
      }
    }
    EXPECT_GT(zero_blocks, 0);  // the zero and subnormal blocks were exercised
    if (bits == 8) {            // ties go to even: block 4 of row 0 holds k + 0.5 with d = 1
      ASSERT_EQ(z.d[4], 1.0f);
      EXPECT_EQ(z.q[4 * kQuantBlock + 0], -4);  // -3.5
      EXPECT_EQ(z.q[4 * kQuantBlock + 1], -2);  // -2.5
      EXPECT_EQ(z.q[4 * kQuantBlock + 5], 2);   // 1.5
      EXPECT_EQ(z.q[4 * kQuantBlock + 6], 2);   // 2.5
    }
  }
}

// The reference against a double evaluation of the same quantized sums: the only difference is
// f32 rounding, at most (blocks + 3) · 2⁻²⁴ · Σ|terms| for a sequential sum of per-block terms
// that each carry up to three roundings.
TEST(MatMulInt8Test, ReferenceComputesTheStatedSums) {
  for (int bits : kBits) {
    for (DType type : kTypes) {
      for (int64_t n_in : kInputs) {
        if (!Fits(type, n_in) || !IntSupportsType(type, bits)) continue;
        const int64_t rows = 2, n_out = 9, blocks = n_in / kQuantBlock;
        std::vector<uint8_t> w = RandomBlocks(type, n_out, n_in, 11);
        std::vector<float> x = Activations(rows, n_in, 12);
        Quantized z = Quantize(Reference(bits), x, rows, n_in);
        std::vector<float> y(static_cast<size_t>(rows * n_out));
        ref::MatMulIntRange(type, w.data(), n_out, z.view, y.data(), 0, n_out);
        const size_t row_bytes = DTypeBytes(type, static_cast<uint64_t>(n_in));
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t o = 0; o < n_out; ++o) {
            double exact = 0.0, magnitude = 0.0;
            for (int64_t b = 0; b < blocks; ++b) {
              double dw = 0.0, m = 0.0;
              int wq[32];
              BlockValues(type, w.data() + o * row_bytes, b, &dw, &m, wq);
              double idot = 0.0;
              for (int i = 0; i < 32; ++i) {
                idot += wq[i] * static_cast<double>(z.q[(r * blocks + b) * kQuantBlock + i]);
              }
              const double dx = z.d[r * blocks + b], sum = z.sum[r * blocks + b];
              const double term = dw * dx * idot + m * dx * sum;
              exact += term;
              magnitude += std::fabs(dw * dx * idot) + std::fabs(m * dx * sum);
            }
            // float(idot) may round too once |idot| ≥ 2²⁴ (int16): one more rounding per term.
            const double bound = (blocks + 4) * std::ldexp(1.0, -24) * magnitude + 1e-30;
            EXPECT_LE(std::fabs(y[r * n_out + o] - exact), bound)
                << bits << " " << GetDTypeInfo(type).name << " n_in " << n_in << " row " << r
                << " out " << o;
          }
        }
      }
    }
  }
}

// Against the f32-activation reference: quantization moves x[i] by at most dx/2, so the
// products differ by at most Σ_b (dx_b / 2) Σ_i |w_i| (plus f32 rounding on both sides).
TEST(MatMulInt8Test, ReferenceStaysWithinTheQuantizationBoundOfTheF32Product) {
  for (int bits : kBits) {
    for (DType type : kTypes) {
      if (!IntSupportsType(type, bits)) continue;
      const int64_t rows = 3, n_out = 20, n_in = 768, blocks = n_in / kQuantBlock;
      std::vector<uint8_t> w = RealisticWeights(type, n_out, n_in, 21);
      std::vector<float> x = Activations(rows, n_in, 22);
      Quantized z = Quantize(Reference(bits), x, rows, n_in);
      std::vector<float> y8(static_cast<size_t>(rows * n_out)), y32(y8.size());
      ref::MatMulIntRange(type, w.data(), n_out, z.view, y8.data(), 0, n_out);
      ref::MatMul(type, w.data(), n_out, n_in, x.data(), rows, y32.data());
      const size_t row_bytes = DTypeBytes(type, static_cast<uint64_t>(n_in));
      std::vector<float> wf(static_cast<size_t>(n_in));
      for (int64_t o = 0; o < n_out; ++o) {
        DequantizeRow(type, w.data() + o * row_bytes, n_in, wf.data());
        for (int64_t r = 0; r < rows; ++r) {
          double bound = 0.0, magnitude = 0.0;
          for (int64_t b = 0; b < blocks; ++b) {
            for (int i = 0; i < 32; ++i) {
              const double wi = std::fabs(wf[b * 32 + i]);
              bound += 0.5 * z.d[r * blocks + b] * wi;
              magnitude += wi * std::fabs(x[(r * blocks + b) * 32 + i]);
            }
          }
          bound += 2.0 * (n_in + 8) * std::ldexp(1.0, -24) * magnitude;
          EXPECT_LE(std::fabs(y8[r * n_out + o] - y32[r * n_out + o]), bound)
              << bits << " " << GetDTypeInfo(type).name << " row " << r << " out " << o;
        }
      }
    }
  }
}

// Every SIMD implementation (both widths) this build and CPU can run.
std::vector<IntKernels> SimdHere() {
  std::vector<IntKernels> impls;
  for (IntIsa isa : {IntIsa::kAvx2, IntIsa::kAvx512Vnni}) {
    for (int bits : kBits) {
      IntKernels k = IntKernelsFor(isa, bits);
      if (k.matmul != nullptr && IntIsaSupported(isa, DetectCpuFeatures())) impls.push_back(k);
    }
  }
  return impls;
}

TEST(MatMulInt8Test, SimdQuantizerMatchesReferenceBitwise) {
  const std::vector<IntKernels> impls = SimdHere();
  if (impls.empty()) GTEST_SKIP() << "no integer SIMD implementation runs on this CPU";
  for (const IntKernels& k : impls) {
    for (int64_t rows : {1, 5, 64}) {
      std::vector<float> x = Activations(rows, 1536, static_cast<uint32_t>(30 + rows));
      Quantized want = Quantize(Reference(k.bits), x, rows, 1536);
      Quantized got = Quantize(k, x, rows, 1536);
      EXPECT_EQ(got.q, want.q) << k.name << " rows " << rows;
      EXPECT_EQ(got.sum, want.sum) << k.name << " rows " << rows;
      for (size_t b = 0; b < want.d.size(); ++b) {
        ASSERT_EQ(Bits(got.d[b]), Bits(want.d[b])) << k.name << " block " << b;
      }
    }
  }
}

// The rows of z from the first `rows` on dropped, in buffers of exactly that size (so that
// AddressSanitizer sees a kernel that reads past its last row).
struct FirstRows {
  std::vector<int16_t> storage;
  std::vector<float> d;
  std::vector<int32_t> sum;
  QuantizedActivations view;
};

FirstRows TakeFirstRows(const Quantized& z, int64_t rows) {
  const int64_t blocks = rows * z.view.n_in / kQuantBlock;
  const size_t element_bytes = z.view.bits == 16 ? 2 : 1;
  FirstRows f;
  f.storage.assign((static_cast<size_t>(rows * z.view.n_in) * element_bytes + 1) / 2, 0);
  std::memcpy(f.storage.data(), z.storage.data(),
              static_cast<size_t>(rows * z.view.n_in) * element_bytes);
  f.d.assign(z.d.begin(), z.d.begin() + blocks);
  f.sum.assign(z.sum.begin(), z.sum.begin() + blocks);
  f.view = {f.storage.data(), f.d.data(), f.sum.data(), rows, z.view.n_in, z.view.bits};
  return f;
}

// k's product of w with 1, 2, … kMostRows rows of activations, each bit for bit the
// reference's. A row's product does not depend on the other rows, so the reference runs once,
// on all kMostRows rows, and each row count is checked against its first rows.
void ExpectProductsMatch(const IntKernels& k, DType type, const std::vector<uint8_t>& w,
                         int64_t n_out, int64_t n_in, uint32_t seed) {
  constexpr int64_t kMostRows = 9;
  std::vector<float> x = Activations(kMostRows, n_in, seed);
  Quantized z = Quantize(Reference(k.bits), x, kMostRows, n_in);
  std::vector<float> want(static_cast<size_t>(kMostRows * n_out));
  ref::MatMulIntRange(type, w.data(), n_out, z.view, want.data(), 0, n_out);
  for (int64_t rows = 1; rows <= kMostRows; ++rows) {
    FirstRows first = TakeFirstRows(z, rows);
    std::vector<float> got(static_cast<size_t>(rows * n_out), -7.0f);
    k.matmul(type, w.data(), n_out, first.view, got.data(), 0, n_out);
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(Bits(got[i]), Bits(want[i]))
          << k.name << " " << GetDTypeInfo(type).name << " n_out " << n_out << " n_in " << n_in
          << " rows " << rows << " at row " << i / n_out << " out " << i % n_out << ": " << got[i]
          << " vs " << want[i];
    }
  }
}

TEST(MatMulInt8Test, SimdProductMatchesReferenceBitwise) {
  const std::vector<IntKernels> impls = SimdHere();
  if (impls.empty()) GTEST_SKIP() << "no integer SIMD implementation runs on this CPU";
  uint32_t seed = 100;
  for (const IntKernels& k : impls) {
    for (DType type : kTypes) {
      for (int64_t n_in : kInputs) {
        if (!Fits(type, n_in) || !IntSupportsType(type, k.bits)) continue;
        for (int64_t n_out : kOutputs) {
          std::vector<uint8_t> random = RandomBlocks(type, n_out, n_in, ++seed);
          std::vector<uint8_t> realistic = RealisticWeights(type, n_out, n_in, ++seed);
          ExpectProductsMatch(k, type, random, n_out, n_in, ++seed);
          ExpectProductsMatch(k, type, realistic, n_out, n_in, ++seed);
        }
      }
    }
  }
}

// A range writes exactly y[r][o_begin..o_end) of every row, with the full call's bits.
TEST(MatMulInt8Test, RangesWriteTheirColumnsOnlyWithTheFullCallsBits) {
  std::vector<IntKernels> impls = {Reference(8), Reference(16)};
  for (const IntKernels& k : SimdHere()) impls.push_back(k);
  const int64_t n_out = 70, n_in = 256, rows = 6;
  const int64_t ranges[][2] = {{0, 70}, {0, 1}, {3, 20}, {16, 32}, {17, 70}, {69, 70}, {5, 5}};
  for (const IntKernels& k : impls) {
    for (DType type : kTypes) {
      if (!IntSupportsType(type, k.bits)) continue;
      std::vector<uint8_t> w = RandomBlocks(type, n_out, n_in, 5);
      std::vector<float> x = Activations(rows, n_in, 6);
      Quantized z = Quantize(k, x, rows, n_in);
      std::vector<float> full(static_cast<size_t>(rows * n_out));
      k.matmul(type, w.data(), n_out, z.view, full.data(), 0, n_out);
      for (const auto& range : ranges) {
        std::vector<float> y(full.size(), -7.0f);
        k.matmul(type, w.data(), n_out, z.view, y.data(), range[0], range[1]);
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t o = 0; o < n_out; ++o) {
            const bool inside = o >= range[0] && o < range[1];
            EXPECT_EQ(Bits(y[r * n_out + o]), Bits(inside ? full[r * n_out + o] : -7.0f))
                << k.name << " " << GetDTypeInfo(type).name << " range " << range[0] << ".."
                << range[1] << " row " << r << " out " << o;
          }
        }
      }
    }
  }
}

// Q6_K at its int32 bound (matmul_int8.h): every weight −32, every scale −128 and every
// activation 127, so each block's idot is 2 · 128 · 16 · 32 · 127 = 16,646,144; no
// implementation may overflow or round it, and the sums are the stated ones.
TEST(MatMulInt8Test, Q6KAtItsIntegerBoundIsExact) {
  const int64_t n_out = 19, n_in = 512, rows = 3, blocks = n_in / kQuantBlock;
  std::vector<uint8_t> w(DTypeBytes(DType::kQ6_K, n_out * n_in), 0);  // q6 = 0: wq = −32
  const uint16_t d = FloatToHalf(0.5f);
  for (size_t b = 0; b < w.size() / 210; ++b) {
    std::memset(&w[b * 210 + 192], 0x80, 16);  // scales −128
    std::memcpy(&w[b * 210 + 208], &d, 2);
  }
  const std::vector<float> x(static_cast<size_t>(rows * n_in), 3.0f);  // q = 127, dx = 3 / 127
  std::vector<IntKernels> impls = {Reference(8)};
  for (const IntKernels& k : SimdHere()) {
    if (k.bits == 8) impls.push_back(k);
  }
  for (const IntKernels& k : impls) {
    Quantized z = Quantize(k, x, rows, n_in);
    ASSERT_EQ(z.q[0], 127);
    std::vector<float> y(static_cast<size_t>(rows * n_out), -7.0f);
    k.matmul(DType::kQ6_K, w.data(), n_out, z.view, y.data(), 0, n_out);
    float want = 0.0f;
    for (int64_t b = 0; b < blocks; ++b) want = want + (0.5f * z.d[0]) * 16646144.0f;
    for (float v : y) ASSERT_EQ(Bits(v), Bits(want)) << k.name << ": " << v << " vs " << want;
  }
}

// With int16 activations Q6_K's idot could overflow int32: no implementation takes it.
TEST(MatMulInt8Test, Q6KHasNoInt16Product) {
  EXPECT_TRUE(IntSupportsType(DType::kQ6_K, 8));
  EXPECT_FALSE(IntSupportsType(DType::kQ6_K, 16));
}

TEST(MatMulInt8Test, BufferRefusesShapesBeyondItsSize) {
  QuantizedBuffer buffer;
  EXPECT_FALSE(buffer.Init(0, 64).ok());
  EXPECT_FALSE(buffer.Init(4, 48).ok());
  ASSERT_TRUE(buffer.Init(4, 1536).ok());
  EXPECT_EQ(buffer.bytes(), 4u * 1536 * 2 + 4u * 48 * (4 + 4));  // int16 values, d and sum
  std::vector<float> x(static_cast<size_t>(8 * 1536), 1.0f);
  const IntKernels quantize = Reference(8);
  EXPECT_NE(buffer.Quantize(quantize, x.data(), 4, 1536).q, nullptr);
  EXPECT_NE(buffer.Quantize(quantize, x.data(), 8, 576).q, nullptr);  // 4608 ≤ 6144 values
  EXPECT_EQ(buffer.Quantize(quantize, x.data(), 5, 1536).q, nullptr);
  EXPECT_EQ(buffer.Quantize(quantize, x.data(), 1, 3072).q, nullptr);
  EXPECT_EQ(buffer.Quantize(quantize, x.data(), 1, 40).q, nullptr);
  EXPECT_EQ(buffer.Quantize(IntKernels{}, x.data(), 1, 64).q, nullptr);
  QuantizedActivations v = buffer.Quantize(quantize, x.data(), 2, 64);
  ASSERT_NE(v.q, nullptr);
  EXPECT_EQ(v.rows, 2);
  EXPECT_EQ(v.bits, 8);
  EXPECT_EQ(static_cast<const int8_t*>(v.q)[0], 127);
  EXPECT_EQ(v.sum[3], 32 * 127);
  // int16 in the same buffer: 1536-wide rows need twice the bytes, which Init provided.
  v = buffer.Quantize(Reference(16), x.data(), 4, 1536);
  ASSERT_NE(v.q, nullptr);
  EXPECT_EQ(v.bits, 16);
  EXPECT_EQ(static_cast<const int16_t*>(v.q)[4 * 1536 - 1], 32767);
}

}  // namespace
}  // namespace staticlm::cpu
