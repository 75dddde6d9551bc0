// The Q5 and K-quant decoders against gguf-py, the oracle: tests/golden/quant_blocks.txt holds
// seeded random blocks of each type (with positive, negative, subnormal and zero f16 scales)
// and the float32 values gguf.quants.dequantize gives for them (tests/reference/
// make_quant_golden.py). Every decoded value must have the same bits, -0.0 included; DotRow
// must agree with a double-precision sum over those values.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/dequantize.h"

namespace staticlm::cpu {
namespace {

struct GoldenType {
  std::string name;
  uint32_t id = 0;
  int blocks = 0;
  std::vector<uint8_t> bytes;
  std::vector<uint32_t> values;  // f32 bit patterns
};

std::vector<uint8_t> FromHex(const std::string& hex) {
  std::vector<uint8_t> out(hex.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<uint8_t>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
  }
  return out;
}

// Parses quant_blocks.txt: `type <name> <id> <blocks>`, `bytes <hex>`, `values <hex> ...`.
std::vector<GoldenType> ReadGolden() {
  std::ifstream in(std::string(STATICLM_GOLDEN_DIR) + "/quant_blocks.txt");
  std::vector<GoldenType> types;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string keyword;
    words >> keyword;
    if (keyword == "type") {
      types.emplace_back();
      words >> types.back().name >> types.back().id >> types.back().blocks;
    } else if (keyword == "bytes" && !types.empty()) {
      std::string hex;
      words >> hex;
      types.back().bytes = FromHex(hex);
    } else if (keyword == "values" && !types.empty()) {
      std::string word;
      while (words >> word) {
        types.back().values.push_back(static_cast<uint32_t>(std::stoul(word, nullptr, 16)));
      }
    }
  }
  return types;
}

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof(b));
  return b;
}

float FromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof(f));
  return f;
}

class QuantBlocksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    golden_ = ReadGolden();
    ASSERT_EQ(golden_.size(), 5u) << "tests/golden/quant_blocks.txt: one entry per type";
  }
  std::vector<GoldenType> golden_;
};

TEST_F(QuantBlocksTest, TypesAreKnownAndSizedAsInTheGolden) {
  for (const GoldenType& g : golden_) {
    SCOPED_TRACE(g.name);
    ASSERT_TRUE(IsKnownDType(g.id));
    const DTypeInfo info = GetDTypeInfo(static_cast<DType>(g.id));
    EXPECT_EQ(g.name, info.name);
    EXPECT_LE(info.block_elements, static_cast<uint32_t>(kMaxBlockElements));
    EXPECT_EQ(g.bytes.size(), static_cast<size_t>(g.blocks) * info.block_bytes);
    EXPECT_EQ(g.values.size(), static_cast<size_t>(g.blocks) * info.block_elements);
    EXPECT_TRUE(IsWeightMatrixDType(static_cast<DType>(g.id)));
  }
}

TEST_F(QuantBlocksTest, EveryBlockDecodesToTheOraclesBits) {
  for (const GoldenType& g : golden_) {
    SCOPED_TRACE(g.name);
    const DType type = static_cast<DType>(g.id);
    const int64_t block_elements = GetDTypeInfo(type).block_elements;
    for (int b = 0; b < g.blocks; ++b) {
      float out[kMaxBlockElements];
      DequantizeBlock(type, g.bytes.data(), b, out);
      for (int64_t j = 0; j < block_elements; ++j) {
        const uint32_t want = g.values[static_cast<size_t>(b * block_elements + j)];
        ASSERT_EQ(Bits(out[j]), want) << "block " << b << " element " << j << ": got " << out[j]
                                      << ", gguf-py " << FromBits(want);
      }
    }
  }
}

TEST_F(QuantBlocksTest, RowsDecodeEveryBlockInOrder) {
  for (const GoldenType& g : golden_) {
    SCOPED_TRACE(g.name);
    std::vector<float> out(g.values.size());
    DequantizeRow(static_cast<DType>(g.id), g.bytes.data(), static_cast<int64_t>(out.size()),
                  out.data());
    for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(Bits(out[i]), g.values[i]) << i;
  }
}

TEST_F(QuantBlocksTest, DotRowMatchesADoubleSumOfTheOraclesValues) {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (const GoldenType& g : golden_) {
    SCOPED_TRACE(g.name);
    const int64_t n = static_cast<int64_t>(g.values.size());
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = dist(rng);
    double want = 0.0, magnitude = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const double term = static_cast<double>(FromBits(g.values[size_t(i)])) * x[size_t(i)];
      want += term;
      magnitude += std::fabs(term);
    }
    const float got = DotRow(static_cast<DType>(g.id), g.bytes.data(), x.data(), n);
    // An f32 sum of n products in order: each product and each addition rounds once.
    const double bound = (2.0 * static_cast<double>(n) + 2.0) * std::ldexp(1.0, -24) * magnitude;
    EXPECT_NEAR(got, want, bound) << "Σ|w·x| = " << magnitude;
  }
}

}  // namespace
}  // namespace staticlm::cpu
