// Packed Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q6_K, Q4_K and Q5_K weights (backends/cpu/packed_weights.h)
// and the integer kernels that stream them:
//  - the packed layout holds every scale and value of the file layout where the header says
//    (checked value by value against the file, padding group included);
//  - each SIMD implementation this CPU runs gives, from the packed copy, the same bits as the
//    reference integer product from the file layout, for rows 1..9 and column counts that leave
//    every remainder of the 16-row groups, over whole calls and over group-aligned ranges;
//  - PackedWeights packs a matrix once however often it is listed and finds it by address.
#include "backends/cpu/packed_weights.h"

#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/half.h"
#include "backends/cpu/matmul_int8.h"
#include "platform/cpu_features.h"

namespace staticlm::cpu {
namespace {

const int64_t kOutputs[] = {1, 5, 15, 16, 17, 33, 70, 130};
const int64_t kInputs[] = {32, 96, 640, 768, 1536};

const DType kTypes[] = {DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0,
                        DType::kQ5_1, DType::kQ6_K, DType::kQ4_K, DType::kQ5_K};

size_t FileBlock(DType type) {
  switch (type) {
    case DType::kQ4_K:
      return 144;
    case DType::kQ5_K:
      return 176;
    case DType::kQ6_K:
      return 210;
    case DType::kQ8_0:
      return 34;
    case DType::kQ4_0:
      return 18;
    case DType::kQ4_1:
      return 20;
    case DType::kQ5_0:
      return 22;
    default:
      return 24;  // Q5_1
  }
}

bool HasMin(DType type) {
  return type == DType::kQ4_K || type == DType::kQ5_K || type == DType::kQ4_1 ||
         type == DType::kQ5_1;
}

// Values per file block: a K-quant super-block holds 256.
int64_t FileValues(DType type) {
  return type == DType::kQ6_K || type == DType::kQ4_K || type == DType::kQ5_K ? 256 : 32;
}

// Random rows: every int8 quant (−128 included), every 5- or 6-bit value and int8 scale, and
// finite f16 scales of either sign (Q6_K's d ends its block).
std::vector<uint8_t> RandomBlocks(DType type, int64_t n_out, int64_t n_in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> scale(-0.02f, 0.02f);
  const size_t block = FileBlock(type);
  std::vector<uint8_t> w(static_cast<size_t>(n_out * n_in / FileValues(type)) * block);
  for (uint8_t& b : w) b = static_cast<uint8_t>(rng());
  for (size_t b = 0; b < w.size() / block; ++b) {
    const uint16_t d = FloatToHalf(scale(rng)), dmin = FloatToHalf(scale(rng));
    std::memcpy(&w[b * block + (type == DType::kQ6_K ? 208 : 0)], &d, 2);
    if (HasMin(type)) std::memcpy(&w[b * block + 2], &dmin, 2);
  }
  return w;
}

// Value e (0..255) of a Q6_K super-block as q6 (0..63), from ggml's layout: half h = e / 128,
// run k = e % 128 / 32, l = e % 32; the low 4 bits in the low (k < 2) or high nibble of
// ql[64h + 32 (k % 2) + l], bits 4-5 in bits 2k, 2k + 1 of qh[32h + l].
int FileQ6K(const uint8_t* block, int e) {
  const int h = e / 128, k = e % 128 / 32, l = e % 32;
  const int low = (block[64 * h + 32 * (k % 2) + l] >> (4 * (k / 2))) & 0x0f;
  return low | ((block[128 + 32 * h + l] >> (2 * k)) & 3) << 4;
}

// Value e (0..31) of block b, row c of a packed Q6_K group, as the header lays it out.
int PackedQ6K(const uint8_t* group, int64_t blocks, int64_t b, int64_t c, int e) {
  const PackedQ6KSections at = Q6KSections(blocks);
  const uint8_t nibbles = group[at.nibbles + 256 * b + 64 * (e / 8) + 4 * c + e % 4];
  const uint8_t high = group[at.high_bits + 128 * b + 64 * (e / 16) + 4 * c + e % 4];
  const int low = (e % 8) < 4 ? nibbles & 0x0f : nibbles >> 4;
  return low | ((high >> (2 * (e % 16 / 4))) & 3) << 4;
}

// Value e (0..31) of a file block, as the integer the format stores (Q8_0: int8; Q5_0: the
// 5-bit value 0..31).
int FileValue(DType type, const uint8_t* block, int e) {
  if (type == DType::kQ8_0) return static_cast<int8_t>(block[2 + e]);
  uint32_t qh;
  std::memcpy(&qh, block + 2, 4);
  const int low = e < 16 ? block[6 + e] & 0x0f : block[6 + e - 16] >> 4;
  return low | static_cast<int>((qh >> e) & 1u) << 4;
}

// The same value read from group `group` of a packed copy, as the header lays it out.
int PackedValue(DType type, const uint8_t* group, int64_t blocks, int64_t b, int64_t c, int e) {
  const uint8_t* after_scales = group + 32 * blocks;
  if (type == DType::kQ8_0) {
    return static_cast<int8_t>(after_scales[512 * b + 64 * (e / 4) + 4 * c + e % 4]);
  }
  uint32_t qh;
  std::memcpy(&qh, after_scales + 64 * b + 4 * c, 4);
  const uint8_t byte = after_scales[64 * blocks + 256 * b + 64 * (e / 8) + 4 * c + e % 4];
  const int low = (e % 8) < 4 ? byte & 0x0f : byte >> 4;
  return low | static_cast<int>((qh >> e) & 1u) << 4;
}

std::vector<float> Activations(int64_t rows, int64_t n_in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(rows * n_in));
  for (float& v : x) v = dist(rng);
  for (int64_t i = 0; i < rows * n_in; i += 97) x[static_cast<size_t>(i)] *= 50.0f;  // outliers
  return x;
}

struct Quantized {
  std::vector<int8_t> q;
  std::vector<float> d;
  std::vector<int32_t> sum;
  QuantizedActivations view;
};

Quantized Quantize(const std::vector<float>& x, int64_t rows, int64_t n_in) {
  Quantized out;
  out.q.resize(x.size());
  out.d.resize(x.size() / 32);
  out.sum.resize(x.size() / 32);
  ref::QuantizeInt8(x.data(), rows, n_in, out.q.data(), out.d.data(), out.sum.data());
  out.view = {out.q.data(), out.d.data(), out.sum.data(), rows, n_in, 8};
  return out;
}

// The SIMD implementations this CPU runs that stream packed weights.
std::vector<IntKernels> PackedKernels() {
  std::vector<IntKernels> kernels;
  const CpuFeatures features = DetectCpuFeatures();
  for (IntIsa isa : {IntIsa::kAvx2, IntIsa::kAvx512Vnni, IntIsa::kNeonDot}) {
    const IntKernels k = IntKernelsFor(isa, 8);
    if (k.packed_matmul != nullptr && IntIsaSupported(isa, features)) kernels.push_back(k);
  }
  return kernels;
}

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof(b));
  return b;
}

TEST(PackedLayoutTest, EveryScaleAndValueIsWhereTheHeaderSays) {
  const int64_t n_out = 37, n_in = 96, blocks = n_in / 32;
  for (DType type : {DType::kQ8_0, DType::kQ5_0}) {
    const std::vector<uint8_t> w = RandomBlocks(type, n_out, n_in, 7);
    const size_t block_bytes = type == DType::kQ8_0 ? 544 : 352;
    std::vector<uint8_t> packed(PackedBytes(type, n_out, n_in));
    ASSERT_EQ(packed.size(), 3u * blocks * block_bytes);  // 37 rows: 3 groups, the last padded
    PackX16(type, w.data(), n_out, n_in, packed.data());
    for (int64_t g = 0; g < 3; ++g) {
      const uint8_t* group = packed.data() + g * blocks * block_bytes;
      for (int64_t b = 0; b < blocks; ++b) {
        for (int64_t c = 0; c < 16; ++c) {
          const int64_t row = std::min<int64_t>(g * 16 + c, n_out - 1);
          const uint8_t* src = w.data() + (row * blocks + b) * FileBlock(type);
          EXPECT_EQ(0, std::memcmp(group + 32 * b + 2 * c, src, 2)) << g << " " << b << " " << c;
          for (int e = 0; e < 32; ++e) {
            ASSERT_EQ(PackedValue(type, group, blocks, b, c, e), FileValue(type, src, e))
                << DTypeName(type) << " group " << g << " block " << b << " row " << c << " value "
                << e;
          }
        }
      }
    }
  }
}

TEST(PackedLayoutTest, EveryQ6KScaleAndValueIsWhereTheHeaderSays) {
  const int64_t n_out = 37, n_in = 512, blocks = n_in / 32;
  const std::vector<uint8_t> w = RandomBlocks(DType::kQ6_K, n_out, n_in, 8);
  std::vector<uint8_t> packed(PackedBytes(DType::kQ6_K, n_out, n_in));
  ASSERT_EQ(packed.size(), 3u * blocks * 420);  // 37 rows: 3 groups, the last padded
  PackX16(DType::kQ6_K, w.data(), n_out, n_in, packed.data());
  const PackedQ6KSections at = Q6KSections(blocks);
  for (int64_t g = 0; g < 3; ++g) {
    const uint8_t* group = packed.data() + g * blocks * 420;
    for (int64_t c = 0; c < 16; ++c) {
      const int64_t row = std::min<int64_t>(g * 16 + c, n_out - 1);
      for (int64_t b = 0; b < blocks; ++b) {
        const uint8_t* src = w.data() + (row * blocks / 8 + b / 8) * 210;
        const int unit = static_cast<int>(b % 8);
        EXPECT_EQ(0, std::memcmp(group + 32 * (b / 8) + 2 * c, src + 208, 2)) << g << " " << b;
        EXPECT_EQ(group[at.scales + 32 * b + c], src[192 + 2 * unit]) << g << " " << b << " " << c;
        EXPECT_EQ(group[at.scales + 32 * b + 16 + c], src[193 + 2 * unit]) << g << " " << b;
        for (int e = 0; e < 32; ++e) {
          ASSERT_EQ(PackedQ6K(group, blocks, b, c, e), FileQ6K(src, 32 * unit + e))
              << "group " << g << " block " << b << " row " << c << " value " << e;
        }
      }
    }
  }
  EXPECT_EQ(PackedBytes(DType::kQ6_K, 16, 640), 0u);  // rows must be whole super-blocks
}

// Sub-block j's 6-bit scale and min of a Q4_K super-block, from ggml's packing: j < 4 in the
// low 6 bits of scales[j] and scales[j + 4]; else the low 4 bits in the nibbles of scales[j + 4]
// and the top 2 in the top bits of scales[j − 4] and scales[j].
void FileQ4KScale(const uint8_t* block, int j, int* sc, int* mn) {
  const uint8_t* q = block + 4;
  *sc = j < 4 ? q[j] & 63 : (q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4);
  *mn = j < 4 ? q[j + 4] & 63 : (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
}

TEST(PackedLayoutTest, EveryQ4KScaleAndValueIsWhereTheHeaderSays) {
  const int64_t n_out = 37, n_in = 512, blocks = n_in / 32;
  const std::vector<uint8_t> w = RandomBlocks(DType::kQ4_K, n_out, n_in, 9);
  std::vector<uint8_t> packed(PackedBytes(DType::kQ4_K, n_out, n_in));
  ASSERT_EQ(packed.size(), 3u * blocks * 296);  // 37 rows: 3 groups, the last padded
  PackX16(DType::kQ4_K, w.data(), n_out, n_in, packed.data());
  const PackedQ4KSections at = Q4KSections(blocks);
  for (int64_t g = 0; g < 3; ++g) {
    const uint8_t* group = packed.data() + g * blocks * 296;
    for (int64_t c = 0; c < 16; ++c) {
      const int64_t row = std::min<int64_t>(g * 16 + c, n_out - 1);
      for (int64_t b = 0; b < blocks; ++b) {
        const uint8_t* src = w.data() + (row * blocks / 8 + b / 8) * 144;
        const int unit = static_cast<int>(b % 8);
        EXPECT_EQ(0, std::memcmp(group + 64 * (b / 8) + 2 * c, src, 2)) << g << " " << b;
        EXPECT_EQ(0, std::memcmp(group + 64 * (b / 8) + 32 + 2 * c, src + 2, 2)) << g << " " << b;
        int sc = 0, mn = 0;
        FileQ4KScale(src, unit, &sc, &mn);
        EXPECT_EQ(group[at.scales + 32 * b + c], sc) << g << " " << b << " " << c;
        EXPECT_EQ(group[at.scales + 32 * b + 16 + c], mn) << g << " " << b << " " << c;
        for (int e = 0; e < 32; ++e) {
          const uint8_t byte = group[at.nibbles + 256 * b + 64 * (e / 8) + 4 * c + e % 4];
          const int packed_value = (e % 8) < 4 ? byte & 0x0f : byte >> 4;
          const int file_value = (src[16 + 32 * (unit / 2) + e] >> (4 * (unit % 2))) & 0x0f;
          ASSERT_EQ(packed_value, file_value)
              << "group " << g << " block " << b << " row " << c << " value " << e;
        }
      }
    }
  }
  EXPECT_EQ(PackedBytes(DType::kQ4_K, 16, 640), 0u);  // rows must be whole super-blocks
}

// Q4_0, Q4_1, Q5_0, Q5_1 from the file: d [, m] [, qh], 16 bytes of nibbles.
TEST(PackedLayoutTest, EveryLegacyScaleAndValueIsWhereTheHeaderSays) {
  const int64_t n_out = 37, n_in = 96, blocks = n_in / 32;
  for (DType type : {DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1}) {
    const bool min = HasMin(type);
    const bool fifth = type == DType::kQ5_0 || type == DType::kQ5_1;
    const size_t scales = min ? 64 : 32, high = fifth ? 64 : 0, block_bytes = scales + high + 256;
    const std::vector<uint8_t> w = RandomBlocks(type, n_out, n_in, 10);
    std::vector<uint8_t> packed(PackedBytes(type, n_out, n_in));
    ASSERT_EQ(packed.size(), 3u * blocks * block_bytes);  // 37 rows: 3 groups, the last padded
    PackX16(type, w.data(), n_out, n_in, packed.data());
    for (int64_t g = 0; g < 3; ++g) {
      const uint8_t* group = packed.data() + g * blocks * block_bytes;
      for (int64_t c = 0; c < 16; ++c) {
        const int64_t row = std::min<int64_t>(g * 16 + c, n_out - 1);
        for (int64_t b = 0; b < blocks; ++b) {
          const uint8_t* src = w.data() + (row * blocks + b) * FileBlock(type);
          EXPECT_EQ(0, std::memcmp(group + scales * b + 2 * c, src, 2)) << g << " " << b;
          if (min) {
            EXPECT_EQ(0, std::memcmp(group + scales * b + 32 + 2 * c, src + 2, 2)) << b;
          }
          const uint8_t* qh_file = src + (min ? 4 : 2);
          const uint8_t* qs = qh_file + (fifth ? 4 : 0);
          uint32_t qh_packed = 0, qh = 0;
          if (fifth) {
            std::memcpy(&qh, qh_file, 4);
            std::memcpy(&qh_packed, group + scales * blocks + high * b + 4 * c, 4);
          }
          for (int e = 0; e < 32; ++e) {
            const uint8_t byte =
                group[(scales + high) * blocks + 256 * b + 64 * (e / 8) + 4 * c + e % 4];
            const int packed_value = ((e % 8) < 4 ? byte & 0x0f : byte >> 4) |
                                     static_cast<int>((qh_packed >> e) & 1u) << 4;
            const int file_value =
                (e < 16 ? qs[e] & 0x0f : qs[e - 16] >> 4) | static_cast<int>((qh >> e) & 1u) << 4;
            ASSERT_EQ(packed_value, file_value) << DTypeName(type) << " group " << g << " block "
                                                << b << " row " << c << " value " << e;
          }
        }
      }
    }
    EXPECT_EQ(PackedBytes(type, 16, 48), 0u);  // rows must be whole blocks
  }
}

TEST(PackedLayoutTest, EveryQ5KScaleAndValueIsWhereTheHeaderSays) {
  const int64_t n_out = 37, n_in = 512, blocks = n_in / 32;
  const std::vector<uint8_t> w = RandomBlocks(DType::kQ5_K, n_out, n_in, 11);
  std::vector<uint8_t> packed(PackedBytes(DType::kQ5_K, n_out, n_in));
  ASSERT_EQ(packed.size(), 3u * blocks * 360);  // 37 rows: 3 groups, the last padded
  PackX16(DType::kQ5_K, w.data(), n_out, n_in, packed.data());
  const PackedQ5KSections at = Q5KSections(blocks);
  for (int64_t g = 0; g < 3; ++g) {
    const uint8_t* group = packed.data() + g * blocks * 360;
    for (int64_t c = 0; c < 16; ++c) {
      const int64_t row = std::min<int64_t>(g * 16 + c, n_out - 1);
      for (int64_t b = 0; b < blocks; ++b) {
        const uint8_t* src = w.data() + (row * blocks / 8 + b / 8) * 176;
        const int unit = static_cast<int>(b % 8);
        EXPECT_EQ(0, std::memcmp(group + 64 * (b / 8) + 2 * c, src, 2)) << g << " " << b;
        EXPECT_EQ(0, std::memcmp(group + 64 * (b / 8) + 32 + 2 * c, src + 2, 2)) << g << " " << b;
        int sc = 0, mn = 0;
        FileQ4KScale(src, unit, &sc, &mn);  // Q5_K packs its scales as Q4_K does
        EXPECT_EQ(group[at.scales + 32 * b + c], sc) << g << " " << b << " " << c;
        EXPECT_EQ(group[at.scales + 32 * b + 16 + c], mn) << g << " " << b << " " << c;
        uint32_t qh = 0;
        std::memcpy(&qh, group + at.high_bits + 64 * b + 4 * c, 4);
        for (int e = 0; e < 32; ++e) {
          const uint8_t byte = group[at.nibbles + 256 * b + 64 * (e / 8) + 4 * c + e % 4];
          const int packed_value =
              ((e % 8) < 4 ? byte & 0x0f : byte >> 4) | static_cast<int>((qh >> e) & 1u) << 4;
          // ggml: the nibbles at 48, sub-blocks 2i and 2i + 1 sharing 32 bytes; bit `unit` of
          // qh[e] (at 16) is bit 4.
          const int file_value = ((src[48 + 32 * (unit / 2) + e] >> (4 * (unit % 2))) & 0x0f) |
                                 ((src[16 + e] >> unit) & 1) << 4;
          ASSERT_EQ(packed_value, file_value)
              << "group " << g << " block " << b << " row " << c << " value " << e;
        }
      }
    }
  }
  EXPECT_EQ(PackedBytes(DType::kQ5_K, 16, 640), 0u);  // rows must be whole super-blocks
}

TEST(PackedMatMulTest, BitsEqualTheReferenceFromTheFileLayout) {
  const std::vector<IntKernels> kernels = PackedKernels();
  if (kernels.empty()) {
    GTEST_SKIP() << "this CPU has no packed integer kernels (AVX2, VNNI, NEON dot products)";
  }
  for (DType type : kTypes) {
    for (int64_t n_in : kInputs) {
      if (n_in % FileValues(type) != 0) continue;
      for (int64_t n_out : kOutputs) {
        const std::vector<uint8_t> w =
            RandomBlocks(type, n_out, n_in, static_cast<uint32_t>(n_in + n_out));
        std::vector<uint8_t> packed(PackedBytes(type, n_out, n_in));
        PackX16(type, w.data(), n_out, n_in, packed.data());
        for (int64_t rows = 1; rows <= 9; ++rows) {
          const Quantized x =
              Quantize(Activations(rows, n_in, static_cast<uint32_t>(rows)), rows, n_in);
          std::vector<float> want(static_cast<size_t>(rows * n_out));
          ref::MatMulIntRange(type, w.data(), n_out, x.view, want.data(), 0, n_out);
          for (const IntKernels& k : kernels) {
            std::vector<float> got(want.size(), -1.0f);
            k.packed_matmul(type, packed.data(), n_out, x.view, got.data(), 0, n_out);
            for (size_t i = 0; i < want.size(); ++i) {
              ASSERT_EQ(Bits(got[i]), Bits(want[i]))
                  << k.name << " " << DTypeName(type) << " n_in " << n_in << " n_out " << n_out
                  << " rows " << rows << " at " << i << ": " << got[i] << " vs " << want[i];
            }
          }
        }
      }
    }
  }
}

TEST(PackedMatMulTest, RangesWriteExactlyTheirColumns) {
  const std::vector<IntKernels> kernels = PackedKernels();
  if (kernels.empty()) {
    GTEST_SKIP() << "this CPU has no packed integer kernels (AVX2, VNNI, NEON dot products)";
  }
  const int64_t n_out = 70, rows = 3;
  for (DType type : {DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ6_K,
                     DType::kQ4_K, DType::kQ5_K}) {
    const int64_t n_in = FileValues(type) == 256 ? 768 : 640;
    const std::vector<uint8_t> w = RandomBlocks(type, n_out, n_in, 3);
    std::vector<uint8_t> packed(PackedBytes(type, n_out, n_in));
    PackX16(type, w.data(), n_out, n_in, packed.data());
    const Quantized x = Quantize(Activations(rows, n_in, 5), rows, n_in);
    std::vector<float> want(static_cast<size_t>(rows * n_out));
    ref::MatMulIntRange(type, w.data(), n_out, x.view, want.data(), 0, n_out);
    for (const IntKernels& k : kernels) {
      std::vector<float> got(want.size(), -1.0f);
      k.packed_matmul(type, packed.data(), n_out, x.view, got.data(), 16, 48);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t o = 0; o < n_out; ++o) {
          const float v = got[static_cast<size_t>(r * n_out + o)];
          if (o >= 16 && o < 48) {
            EXPECT_EQ(Bits(v), Bits(want[static_cast<size_t>(r * n_out + o)]))
                << k.name << " " << DTypeName(type) << " " << o;
          } else {
            EXPECT_EQ(v, -1.0f) << k.name << " wrote column " << o << " outside its range";
          }
        }
      }
    }
  }
}

TEST(PackedWeightsTest, PacksEachMatrixOnceAndFindsItByAddress) {
  const std::vector<uint8_t> a = RandomBlocks(DType::kQ8_0, 20, 64, 1);
  const std::vector<uint8_t> b = RandomBlocks(DType::kQ5_0, 3, 32, 2);
  const std::vector<uint8_t> f16(64);
  PackedWeights packed;
  ASSERT_TRUE(packed
                  .Build({{a.data(), DType::kQ8_0, 20, 64},
                          {b.data(), DType::kQ5_0, 3, 32},
                          {a.data(), DType::kQ8_0, 20, 64},
                          {f16.data(), DType::kF16, 2, 16}})
                  .ok());
  EXPECT_EQ(packed.count(), 2u);  // a once; the F16 matrix has no packed layout
  EXPECT_EQ(packed.bytes(), 2u * 2 * 544 + 64 * ((352 + 63) / 64));
  ASSERT_NE(packed.Find(a.data()), nullptr);
  ASSERT_NE(packed.Find(b.data()), nullptr);
  EXPECT_EQ(packed.Find(f16.data()), nullptr);
  EXPECT_EQ(packed.Find(a.data() + 1), nullptr);
  std::vector<uint8_t> want(PackedBytes(DType::kQ8_0, 20, 64));
  PackX16(DType::kQ8_0, a.data(), 20, 64, want.data());
  EXPECT_EQ(0, std::memcmp(packed.Find(a.data()), want.data(), want.size()));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(packed.Find(b.data())) % 64, 0u);
}

}  // namespace
}  // namespace staticlm::cpu
