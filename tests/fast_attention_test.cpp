// The SIMD attention kernel against ref::Attention on random data of awkward sizes, with f16
// and f32 caches: only the order of float additions may differ.
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/fast_attention.h"
#include "backends/cpu/reference_kernels.h"

namespace staticlm::cpu {
namespace {

std::vector<float> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

void Compare(DType type, int64_t heads, int64_t kv_heads, int64_t hd, int64_t capacity,
             int64_t rows, int32_t first) {
  const char* name = nullptr;
  AttentionFn fast = SelectAttention(DetectCpuFeatures(), hd, &name);
  if (std::string(name) == "reference") GTEST_SKIP() << "no SIMD attention on this CPU";
  const int64_t total = first + rows;
  auto k = Random(size_t(total * kv_heads * hd), 1), v = Random(size_t(total * kv_heads * hd), 2);
  auto q = Random(size_t(rows * heads * hd), 3);
  size_t elem = type == DType::kF16 ? 2 : 4;
  std::vector<uint8_t> kc(size_t(kv_heads * capacity * hd) * elem), vc(kc.size());
  ref::KvStore(k.data(), v.data(), total, kv_heads, hd, capacity, 0, type, kc.data(), vc.data());
  std::vector<float> s1(size_t(heads * capacity)), s2(s1.size());
  std::vector<float> o1(size_t(rows * heads * hd)), o2(o1.size());
  float scale = 1.0f / std::sqrt(float(hd));
  // Rows first..first+rows−1 read slots up to their own position.
  ref::Attention(q.data(), rows, heads, kv_heads, hd, capacity, first, scale, type, kc.data(),
                 vc.data(), s1.data(), o1.data(), 0, heads);
  fast(q.data(), rows, heads, kv_heads, hd, capacity, first, scale, type, kc.data(), vc.data(),
       s2.data(), o2.data(), 0, heads);
  for (size_t i = 0; i < o1.size(); ++i) {
    ASSERT_NEAR(o1[i], o2[i], 2e-5f * (1.0f + std::fabs(o1[i]))) << "element " << i;
  }
}

TEST(FastAttentionTest, MatchesReferenceOnAwkwardSizes) {
  for (DType type : {DType::kF16, DType::kF32}) {
    Compare(type, 9, 3, 64, 2048, 1, 0);
    Compare(type, 9, 3, 64, 2048, 1, 2047);
    Compare(type, 6, 2, 8, 37, 5, 11);
    Compare(type, 4, 4, 16, 64, 13, 0);
    Compare(type, 3, 1, 24, 100, 3, 96);
  }
}

TEST(FastAttentionTest, HeadSizesNotMultipleOfEightUseTheReference) {
  const char* name = nullptr;
  EXPECT_EQ(SelectAttention(DetectCpuFeatures(), 12, &name), &ref::Attention);
  EXPECT_STREQ(name, "reference");
}

}  // namespace
}  // namespace staticlm::cpu
