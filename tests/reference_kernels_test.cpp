// The reference kernels checked against independent double-precision formulas written here,
// on awkward sizes. These kernels are the oracle for every faster kernel, so they are tested
// against mathematics, not against themselves.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/dequantize.h"
#include "backends/cpu/hadamard.h"
#include "backends/cpu/half.h"
#include "backends/cpu/reference_kernels.h"

namespace staticlm::cpu {
namespace {

std::vector<float> RandomVector(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

TEST(HalfTest, EveryFiniteHalfRoundTrips) {
  for (uint32_t h = 0; h < 65536; ++h) {
    uint32_t exponent = (h >> 10) & 0x1f;
    if (exponent == 0x1f && (h & 0x3ff) != 0) continue;  // NaN payloads need not survive
    EXPECT_EQ(FloatToHalf(HalfToFloat(uint16_t(h))), h) << "half bits " << h;
  }
}

TEST(HalfTest, KnownValuesAndRounding) {
  EXPECT_EQ(HalfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(HalfToFloat(0xc000), -2.0f);
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);               // largest finite
  EXPECT_EQ(FloatToHalf(1e6f), 0x7c00);                   // overflow → inf
  // 1 + 2^-11 is halfway between 1 and the next half: ties go to the even mantissa (1.0).
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(FloatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(BFloat16ToFloat(0x3f80), 1.0f);
}

// Builds one Q4_1 block with scale d, minimum m and nibble j % 16 at element j.
std::vector<uint8_t> Q41Block(float d, float m) {
  std::vector<uint8_t> b(20);
  uint16_t hd = FloatToHalf(d), hm = FloatToHalf(m);
  std::memcpy(&b[0], &hd, 2);
  std::memcpy(&b[2], &hm, 2);
  for (int j = 0; j < 16; ++j) b[4 + j] = uint8_t((j % 16) | (((j + 16) % 16) << 4));
  return b;
}

TEST(DequantizeTest, Q4_1FollowsItsFormula) {
  auto block = Q41Block(0.5f, -3.0f);
  float out[32];
  DequantizeBlock(DType::kQ4_1, block.data(), 0, out);
  for (int j = 0; j < 32; ++j) EXPECT_FLOAT_EQ(out[j], (j % 16) * 0.5f - 3.0f) << j;
}

TEST(DequantizeTest, Q4_0CentresNibblesAtEight) {
  std::vector<uint8_t> b(18);
  uint16_t hd = FloatToHalf(0.25f);
  std::memcpy(&b[0], &hd, 2);
  for (int j = 0; j < 16; ++j) b[2 + j] = uint8_t(j | ((15 - j) << 4));
  float out[32];
  DequantizeBlock(DType::kQ4_0, b.data(), 0, out);
  for (int j = 0; j < 16; ++j) {
    EXPECT_FLOAT_EQ(out[j], (j - 8) * 0.25f);
    EXPECT_FLOAT_EQ(out[j + 16], (15 - j - 8) * 0.25f);
  }
}

TEST(DequantizeTest, Q8_0IsSignedBytesTimesScale) {
  std::vector<uint8_t> b(34 * 2);
  for (int blk = 0; blk < 2; ++blk) {
    uint16_t hd = FloatToHalf(blk == 0 ? 0.125f : 2.0f);
    std::memcpy(&b[blk * 34], &hd, 2);
    for (int j = 0; j < 32; ++j) b[blk * 34 + 2 + j] = uint8_t(int8_t(j * 8 - 128));
  }
  float out[64];
  DequantizeRow(DType::kQ8_0, b.data(), 64, out);
  for (int j = 0; j < 32; ++j) {
    EXPECT_FLOAT_EQ(out[j], (j * 8 - 128) * 0.125f);
    EXPECT_FLOAT_EQ(out[32 + j], (j * 8 - 128) * 2.0f);
  }
}

TEST(MatMulTest, F32MatchesDoubleProductOnAwkwardSizes) {
  const int64_t n_out = 37, n_in = 53, rows = 3;
  auto w = RandomVector(n_out * n_in, 1);
  auto x = RandomVector(rows * n_in, 2);
  std::vector<float> y(rows * n_out);
  ref::MatMul(DType::kF32, reinterpret_cast<const uint8_t*>(w.data()), n_out, n_in, x.data(), rows,
              y.data());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < n_out; ++o) {
      double expect = 0;
      for (int64_t i = 0; i < n_in; ++i) expect += double(w[o * n_in + i]) * x[r * n_in + i];
      EXPECT_NEAR(y[r * n_out + o], expect, 1e-4) << r << "," << o;
    }
  }
}

TEST(MatMulTest, QuantizedRowsUseTheirDequantizedValues) {
  // Two Q4_1 rows of 64 (two blocks each); the product must equal the product with the
  // dequantized values, which the formula test above pins down.
  std::vector<uint8_t> w;
  for (int b = 0; b < 4; ++b) {
    auto block = Q41Block(0.1f * (b + 1), -0.5f * b);
    w.insert(w.end(), block.begin(), block.end());
  }
  auto x = RandomVector(64, 3);
  float y[2];
  ref::MatMul(DType::kQ4_1, w.data(), 2, 64, x.data(), 1, y);
  for (int o = 0; o < 2; ++o) {
    double expect = 0;
    for (int i = 0; i < 64; ++i) {
      int block = o * 2 + i / 32;
      float d = HalfToFloat(FloatToHalf(0.1f * (block + 1)));
      float m = HalfToFloat(FloatToHalf(-0.5f * block));
      expect += double((i % 32) % 16 * d + m) * x[i];
    }
    EXPECT_NEAR(y[o], expect, 1e-4);
  }
}

// The product takes rows in groups (each weight block decoded once per group): every value must
// still be DotRow's for that row alone, bit for bit, across group seams (70 rows), and a column
// range writes its columns only.
TEST(MatMulTest, RowGroupsGiveEachRowsDotRowBitForBit) {
  const int64_t n_out = 5, n_in = 96, rows = 70;
  std::vector<uint8_t> w;
  for (int b = 0; b < n_out * n_in / 32; ++b) {
    auto block = Q41Block(0.05f * (b % 7 + 1), -0.3f * (b % 3));
    w.insert(w.end(), block.begin(), block.end());
  }
  const uint64_t row_bytes = DTypeBytes(DType::kQ4_1, n_in);
  auto x = RandomVector(rows * n_in, 4);
  std::vector<float> y(rows * n_out, -7.0f);
  ref::MatMulColumns(DType::kQ4_1, w.data(), n_out, n_in, x.data(), rows, y.data(), 1, 4);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < n_out; ++o) {
      const float got = y[r * n_out + o];
      if (o < 1 || o >= 4) {
        EXPECT_EQ(got, -7.0f) << "row " << r << " column " << o << " is outside the range";
        continue;
      }
      const float want = DotRow(DType::kQ4_1, w.data() + o * row_bytes, x.data() + r * n_in, n_in);
      uint32_t got_bits = 0, want_bits = 0;
      std::memcpy(&got_bits, &got, 4);
      std::memcpy(&want_bits, &want, 4);
      EXPECT_EQ(got_bits, want_bits) << "row " << r << " column " << o;
    }
  }
}

TEST(RmsNormTest, MatchesFormula) {
  const int64_t rows = 2, n = 77;
  auto x = RandomVector(rows * n, 4, 3.0f);
  auto w = RandomVector(n, 5);
  std::vector<float> y(rows * n);
  ref::RmsNorm(x.data(), w.data(), rows, n, 1e-5f, y.data());
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < n; ++i) ss += double(x[r * n + i]) * x[r * n + i];
    double inv = 1.0 / std::sqrt(ss / n + 1e-5);
    for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(y[r * n + i], x[r * n + i] * inv * w[i], 1e-5);
  }
}

// Hugging Face Llama rotates halves: (x[i], x[i + d/2]). GGUF files store Q/K rows permuted so
// that rotating adjacent pairs gives the same result; check that equivalence with the permute
// llama.cpp's converter applies: row (i, j) of a head comes from row (j, i) in a [2, d/2] view.
TEST(RopeTest, AdjacentPairsOnPermutedRowsEqualRotateHalf) {
  const int64_t heads = 3, hd = 64;
  const int32_t position = 1234;
  const float base = 100000.0f;
  auto original = RandomVector(heads * hd, 6);
  std::vector<float> permuted(heads * hd);
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t i = 0; i < hd / 2; ++i) {
      permuted[h * hd + 2 * i] = original[h * hd + i];
      permuted[h * hd + 2 * i + 1] = original[h * hd + i + hd / 2];
    }
  }
  ref::Rope(permuted.data(), 1, heads, hd, position, base);
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t i = 0; i < hd / 2; ++i) {
      double angle = position * std::pow(double(base), -2.0 * i / hd);
      double a = original[h * hd + i], b = original[h * hd + i + hd / 2];
      EXPECT_NEAR(permuted[h * hd + 2 * i], a * std::cos(angle) - b * std::sin(angle), 1e-4);
      EXPECT_NEAR(permuted[h * hd + 2 * i + 1], b * std::cos(angle) + a * std::sin(angle), 1e-4);
    }
  }
}

TEST(RopeTest, RowsAdvanceOnePositionEach) {
  auto x = RandomVector(2 * 8, 7);
  auto y = x;
  ref::Rope(y.data(), 2, 1, 8, 0, 10000.0f);
  for (int i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(y[i], x[i]) << "position 0 is the identity";
  auto second = std::vector<float>(x.begin() + 8, x.end());
  ref::Rope(second.data(), 1, 1, 8, 1, 10000.0f);
  for (int i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(y[8 + i], second[i]);
}

TEST(ElementwiseTest, SiluMulAddSoftmax) {
  float gate[3] = {-2.0f, 0.0f, 3.0f}, up[3] = {1.0f, 5.0f, -2.0f};
  ref::SiluMul(gate, up, 3);
  EXPECT_NEAR(gate[0], -2.0 / (1 + std::exp(2.0)), 1e-6);
  EXPECT_EQ(gate[1], 0.0f);
  EXPECT_NEAR(gate[2], 3.0 / (1 + std::exp(-3.0)) * -2.0, 1e-5);
  float a[2] = {1, 2}, b[2] = {10, 20};
  ref::Add(a, b, 2);
  EXPECT_EQ(a[0], 11.0f);
  EXPECT_EQ(a[1], 22.0f);
  float s[3] = {1000.0f, 1001.0f, 999.0f};  // large values: must subtract the max
  ref::Softmax(s, 3);
  double z = std::exp(-1.0) + 1 + std::exp(-2.0);
  EXPECT_NEAR(s[0], std::exp(-1.0) / z, 1e-6);
  EXPECT_NEAR(s[1], 1 / z, 1e-6);
  EXPECT_NEAR(s[2], std::exp(-2.0) / z, 1e-6);
}

// Causal grouped-query attention, computed directly from the K/V rows in double.
// q8 and q4 (KIVI, groups of 4 tokens) quantize: `tolerance` bounds their error too.
void ExpectAttentionMatches(DType cache_type, double tolerance, KvQuant quant = KvQuant::kNone,
                            int64_t head_dim = 0) {
  const int64_t heads = 6, kv_heads = 2, capacity = 20, rows = 6, group = 4,
                recent = group + rows - 1;
  const int64_t hd = head_dim > 0 ? head_dim : (quant == KvQuant::kNone ? 12 : 16);
  const int32_t first = 7;  // rows at positions 7..12; earlier positions come from the cache
  const int64_t total = first + rows;
  auto k_rows = RandomVector(total * kv_heads * hd, 8);
  auto v_rows = RandomVector(total * kv_heads * hd, 9);
  auto q = RandomVector(rows * heads * hd, 10);
  size_t elem = cache_type == DType::kF16 ? 2 : 4;
  std::vector<uint8_t> k_cache(kv_heads * capacity * hd * elem), v_cache(k_cache.size());
  std::vector<float> k_side(kv_heads * capacity * 2 * hd), v_side(k_side.size());
  std::vector<float> k_recent(kv_heads * recent * hd), v_recent(k_recent.size());
  float scale = 1.0f / std::sqrt(float(hd));
  ref::KvCacheView cache;
  cache.params.kv_quant = quant;
  cache.k_side = quant != KvQuant::kNone ? k_side.data() : nullptr;
  cache.v_side = quant != KvQuant::kNone ? v_side.data() : nullptr;
  if (quant == KvQuant::kQ4) {
    cache.params.kv_group = group;
    cache.params.recent_slots = recent;
    cache.k_recent = k_recent.data();
    cache.v_recent = v_recent.data();
  }
  cache.params.n_heads = heads;
  cache.params.n_kv_heads = kv_heads;
  cache.params.head_dim = hd;
  cache.params.scale = scale;
  cache.params.rope_base = 10000.0f;
  cache.params.cache_slots = capacity;
  cache.type = cache_type;
  cache.k = k_cache.data();
  cache.v = v_cache.data();
  ref::KvStore(k_rows.data(), v_rows.data(), first, 0, cache);
  ref::KvStore(k_rows.data() + first * kv_heads * hd, v_rows.data() + first * kv_heads * hd, rows,
               first, cache);
  std::vector<float> scores(heads * capacity), out(rows * heads * hd);
  ref::Attention(q.data(), rows, first, cache, scores.data(), out.data(), 0, 2);
  ref::Attention(q.data(), rows, first, cache, scores.data(), out.data(), 2, heads);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t h = 0; h < heads; ++h) {
      int64_t g = h / (heads / kv_heads);
      std::vector<double> w(first + r + 1);
      double max_w = -1e30, sum = 0;
      for (int64_t t = 0; t <= first + r; ++t) {
        double dot = 0;
        for (int64_t d = 0; d < hd; ++d) {
          dot += double(q[(r * heads + h) * hd + d]) * k_rows[(t * kv_heads + g) * hd + d];
        }
        w[t] = dot * scale;
        max_w = std::max(max_w, w[t]);
      }
      for (double& x : w) sum += (x = std::exp(x - max_w));
      for (int64_t d = 0; d < hd; ++d) {
        double expect = 0;
        for (int64_t t = 0; t <= first + r; ++t) {
          expect += w[t] / sum * v_rows[(t * kv_heads + g) * hd + d];
        }
        EXPECT_NEAR(out[(r * heads + h) * hd + d], expect, tolerance)
            << "row " << r << " head " << h << " dim " << d;
      }
    }
  }
}

// int8 with a scale per (token, head) of max|x| / 127, in the Hadamard basis.
TEST(AttentionTest, Q8CacheMatchesWithinInt8Precision) {
  ExpectAttentionMatches(kDTypeI8, 0.03, KvQuant::kQ8);
}

// A head of 24 dims, which q8 rotates in blocks of 16 and 8.
TEST(AttentionTest, Q8CacheOfAHeadInHadamardBlocksMatchesWithinInt8Precision) {
  ExpectAttentionMatches(kDTypeI8, 0.03, KvQuant::kQ8, 24);
}

// 4 bits (16 levels over each key channel's or value row's range): coarse, but a wrong slot,
// group or scale would be off by the data's own size (~1).
TEST(AttentionTest, Q4CacheMatchesWithinFourBitPrecision) {
  ExpectAttentionMatches(kDTypeKvQ4, 0.25, KvQuant::kQ4);
}

TEST(AttentionTest, F32CacheMatchesDirectComputation) {
  ExpectAttentionMatches(DType::kF32, 1e-5);
}

// f16 keys and values carry 2^-11 relative rounding; with unit-scale data that bounds the
// output error near 1e-3.
TEST(AttentionTest, F16CacheMatchesWithinHalfPrecision) {
  ExpectAttentionMatches(DType::kF16, 3e-3);
}

// A q4 Sink cache (StreamingLLM with KIVI) against the formula: 3 sinks of a 12-position window
// in groups of 4, so the sinks' slots are rounded up to 4 and the ring follows (kv_policy.h
// SinkSlots); stored a position at a time far past the ring's size, then a 5-row step. Each row
// attends the sinks with its query turned by (cache position − position), as RoPE turns it,
// and the window's keys with the query as it is. A slot of the ring landing on a sink, or a
// key group split across the ring's seam, would be off by the data's own size (~1).
TEST(AttentionTest, Q4SinkCacheMatchesStreamingAttentionWithinFourBitPrecision) {
  const int64_t heads = 4, kv_heads = 2, hd = 16, sinks = 3, window = 12, group = 4, rows = 5;
  const int64_t slots = 20, recent = group + rows - 1;  // 4 sink slots + a ring of ≥ 9 + 4
  const int32_t first = 60;
  const int64_t total = first + rows;
  auto k_rows = RandomVector(total * kv_heads * hd, 40);
  auto v_rows = RandomVector(total * kv_heads * hd, 41);
  auto q = RandomVector(rows * heads * hd, 42);
  std::vector<uint8_t> k_cache(kv_heads * slots * hd / 2), v_cache(k_cache.size());
  std::vector<float> k_side(kv_heads * slots / group * 2 * hd), v_side(kv_heads * slots * 2);
  std::vector<float> k_recent(kv_heads * recent * hd), v_recent(k_recent.size());
  ref::KvCacheView cache;
  OpParams& p = cache.params;
  p.n_heads = heads;
  p.n_kv_heads = kv_heads;
  p.head_dim = hd;
  p.scale = 1.0f / std::sqrt(float(hd));
  p.rope_base = 10000.0f;
  p.cache_policy = CachePolicy::kSink;
  p.window = window;
  p.sinks = sinks;
  p.cache_slots = slots;
  p.kv_quant = KvQuant::kQ4;
  p.kv_group = group;
  p.recent_slots = recent;
  cache.type = kDTypeKvQ4;
  cache.k = k_cache.data();
  cache.v = v_cache.data();
  cache.k_side = k_side.data();
  cache.v_side = v_side.data();
  cache.k_recent = k_recent.data();
  cache.v_recent = v_recent.data();
  for (int32_t t = 0; t < first; ++t) {
    ref::KvStore(&k_rows[t * kv_heads * hd], &v_rows[t * kv_heads * hd], 1, t, cache);
  }
  ref::KvStore(&k_rows[first * kv_heads * hd], &v_rows[first * kv_heads * hd], rows, first, cache);
  std::vector<float> scores(heads * slots), out(rows * heads * hd);
  ref::Attention(q.data(), rows, first, cache, scores.data(), out.data(), 0, heads);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t position = first + r;
    const int64_t begin = position - (window - sinks) + 1;
    const int64_t delta = (sinks + (position - begin + 1) - 1) - position;
    for (int64_t h = 0; h < heads; ++h) {
      const float* qh = &q[(r * heads + h) * hd];
      const int64_t g = h / (heads / kv_heads);
      std::vector<double> turned(hd);
      for (int64_t i = 0; i < hd / 2; ++i) {
        const double angle = double(delta) * std::pow(10000.0, -2.0 * double(i) / double(hd));
        turned[2 * i] = qh[2 * i] * std::cos(angle) - qh[2 * i + 1] * std::sin(angle);
        turned[2 * i + 1] = qh[2 * i] * std::sin(angle) + qh[2 * i + 1] * std::cos(angle);
      }
      std::vector<int64_t> keys;
      for (int64_t t = 0; t < sinks; ++t) keys.push_back(t);
      for (int64_t t = begin; t <= position; ++t) keys.push_back(t);
      std::vector<double> w;
      double max_w = -1e30, sum = 0.0;
      for (int64_t t : keys) {
        double dot = 0.0;
        for (int64_t d = 0; d < hd; ++d) {
          dot += (t < sinks ? turned[d] : qh[d]) * k_rows[(t * kv_heads + g) * hd + d];
        }
        w.push_back(dot * p.scale);
        max_w = std::max(max_w, w.back());
      }
      for (double& x : w) sum += (x = std::exp(x - max_w));
      for (int64_t d = 0; d < hd; ++d) {
        double expect = 0.0;
        for (size_t i = 0; i < keys.size(); ++i) {
          expect += w[i] / sum * v_rows[(keys[i] * kv_heads + g) * hd + d];
        }
        EXPECT_NEAR(out[(r * heads + h) * hd + d], expect, 0.25)
            << "row " << r << " head " << h << " dim " << d;
      }
    }
  }
}

// The transform against its definition: row i of the Walsh-Hadamard matrix of order 2^k has
// entry (−1)^popcount(i & j) / √(2^k) in column j; a size that is not a power of two is the
// block-diagonal matrix of its binary digits' blocks, largest first. Its own inverse.
TEST(HadamardTest, BlocksOfTheBinaryDigitsEqualTheDefinitionAndInvertThemselves) {
  for (int64_t n : {1, 2, 16, 24, 80, 96, 112, 256}) {
    std::vector<float> x = RandomVector(n, 30 + uint32_t(n));
    std::vector<float> y = x;
    Hadamard(y.data(), n);
    int64_t begin = 0;
    for (int64_t block : {256, 128, 64, 32, 16, 8, 4, 2, 1}) {
      if ((n & block) == 0) continue;
      for (int64_t i = 0; i < block; ++i) {
        double expect = 0.0;
        for (int64_t j = 0; j < block; ++j) {
          const double sign = __builtin_popcountll(uint64_t(i & j)) % 2 == 0 ? 1.0 : -1.0;
          expect += sign * x[size_t(begin + j)];
        }
        expect /= std::sqrt(double(block));
        EXPECT_NEAR(y[size_t(begin + i)], expect, 1e-5) << "n " << n << " index " << begin + i;
      }
      begin += block;
    }
    ASSERT_EQ(begin, n);
    Hadamard(y.data(), n);
    for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(y[size_t(i)], x[size_t(i)], 1e-5) << n;
  }
}

TEST(EmbedTest, RowsAreDequantizedTableRows) {
  auto table = RandomVector(10 * 6, 11);
  int32_t tokens[3] = {9, 0, 4};
  std::vector<float> out(3 * 6);
  ref::Embed(DType::kF32, reinterpret_cast<const uint8_t*>(table.data()), 6, tokens, 3, out.data());
  for (int r = 0; r < 3; ++r) {
    for (int i = 0; i < 6; ++i) EXPECT_EQ(out[r * 6 + i], table[tokens[r] * 6 + i]);
  }
}

}  // namespace
}  // namespace staticlm::cpu
