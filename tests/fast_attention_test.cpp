// The SIMD attention kernels (AVX-512 and AVX2, or NEON on arm64) against ref::Attention on random
// data of awkward sizes, for every cache policy (static, sliding window, sinks) and storage (f16,
// f32, q8, q4): only the order of float additions (and e^x, within 2 ulp) may differ.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <utility>
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

struct Case {
  int64_t heads, kv_heads, hd, slots, rows;
  int32_t first;
  CachePolicy policy = CachePolicy::kStatic;
  int32_t window = 0, sinks = 0;
  int32_t group = 0, recent = 0;  // q4: tokens per key group, ring slots
};

// The SIMD kernels this CPU runs for heads of `hd`: the best one and, on an AVX-512 machine,
// the AVX2 one too.
std::vector<std::pair<std::string, AttentionFn>> Kernels(int64_t hd) {
  std::vector<std::pair<std::string, AttentionFn>> out;
  CpuFeatures f = DetectCpuFeatures();
  for (int pass = 0; pass < 2; ++pass) {
    const char* name = nullptr;
    AttentionFn fn = SelectAttention(f, hd, &name);
    if (std::string(name) != "reference" && (out.empty() || out.back().second != fn)) {
      out.emplace_back(name, fn);
    }
    f.avx512f = false;
  }
  return out;
}

// A cache of `type` holding random keys and values for positions 0 … c.first + c.rows − 1 (the
// vectors are the cache's storage), and random queries for the step's rows.
struct FilledCache {
  std::vector<float> k, v, q;
  std::vector<uint8_t> kc, vc;
  std::vector<float> ks, vs, kr, vr;
  ref::KvCacheView view;

  FilledCache(DType type, const Case& c) {
    const int64_t total = c.first + c.rows;
    k = Random(size_t(total * c.kv_heads * c.hd), 1);
    v = Random(size_t(total * c.kv_heads * c.hd), 2);
    q = Random(size_t(c.rows * c.heads * c.hd), 3);
    const bool q4 = type == kDTypeKvQ4;
    const size_t elem = type == DType::kF32 ? 4 : (type == DType::kF16 ? 2 : 1);
    kc.resize(size_t(c.kv_heads * c.slots * c.hd) * elem / (q4 ? 2 : 1));
    vc.resize(kc.size());
    // q8: a scale per row; q4: keys (scale, min) per group and channel, values per row.
    ks.resize(size_t(c.kv_heads * c.slots) * (q4 ? 2 * size_t(c.hd) / size_t(c.group) : 1));
    vs.resize(size_t(c.kv_heads * c.slots) * (q4 ? 2 : 1));
    kr.resize(size_t(c.kv_heads * c.recent * c.hd));
    vr.resize(kr.size());
    OpParams& p = view.params;
    p.n_heads = int32_t(c.heads);
    p.n_kv_heads = int32_t(c.kv_heads);
    p.head_dim = int32_t(c.hd);
    p.scale = 1.0f / std::sqrt(float(c.hd));
    p.rope_base = 10000.0f;
    p.cache_policy = c.policy;
    p.window = c.window;
    p.sinks = c.sinks;
    p.cache_slots = int32_t(c.slots);
    p.kv_quant = type == kDTypeI8 ? KvQuant::kQ8 : (q4 ? KvQuant::kQ4 : KvQuant::kNone);
    p.kv_group = c.group;
    p.recent_slots = c.recent;
    view.type = type;
    view.k = kc.data();
    view.v = vc.data();
    if (type == kDTypeI8 || q4) {
      view.k_side = ks.data();
      view.v_side = vs.data();
    }
    if (q4) {
      view.k_recent = kr.data();
      view.v_recent = vr.data();
    }
    // Positions before `first` one at a time (a ring overwrites as it goes), then the step's
    // rows in one store, as the engine does.
    for (int32_t t = 0; t < c.first; ++t) {
      ref::KvStore(k.data() + t * c.kv_heads * c.hd, v.data() + t * c.kv_heads * c.hd, 1, t, view);
    }
    ref::KvStore(k.data() + c.first * c.kv_heads * c.hd, v.data() + c.first * c.kv_heads * c.hd,
                 c.rows, c.first, view);
  }
};

void Compare(DType type, const Case& c) {
  const auto kernels = Kernels(c.hd);
  if (kernels.empty()) GTEST_SKIP() << "no SIMD attention on this CPU";
  FilledCache filled(type, c);
  const ref::KvCacheView& cache = filled.view;
  const std::vector<float>& q = filled.q;
  std::vector<float> s1(size_t(c.heads * c.slots)), s2(s1.size());
  std::vector<float> o1(size_t(c.rows * c.heads * c.hd)), o2(o1.size()), o3(o1.size());
  ref::Attention(q.data(), c.rows, c.first, cache, s1.data(), o1.data(), 0, c.heads);
  for (const auto& [name, fast] : kernels) {
    fast(q.data(), c.rows, c.first, cache, s2.data(), o2.data(), 0, c.heads);
    for (size_t i = 0; i < o1.size(); ++i) {
      ASSERT_NEAR(o1[i], o2[i], 2e-5f * (1.0f + std::fabs(o1[i])))
          << name << " " << DTypeName(type) << " " << CachePolicyName(c.policy) << " element " << i;
    }
    // One head per call (how threads split the work) gives bitwise the same output as all
    // heads in one call, which serves a KV head's query heads together.
    for (int64_t h = 0; h < c.heads; ++h) {
      fast(q.data(), c.rows, c.first, cache, s2.data(), o3.data(), h, h + 1);
    }
    ASSERT_EQ(o2, o3) << name << " " << DTypeName(type) << " " << CachePolicyName(c.policy);
  }
}

TEST(FastAttentionTest, MatchesReferenceOnAwkwardSizes) {
  for (DType type : {DType::kF16, DType::kF32, kDTypeI8}) {
    Compare(type, {9, 3, 64, 2048, 1, 0});
    Compare(type, {9, 3, 64, 2048, 1, 2047});
    Compare(type, {6, 2, 8, 37, 5, 11});
    Compare(type, {4, 4, 16, 64, 13, 0});
    // Heads of 24, 80 and 48 dims: q8 rotates them in power-of-two blocks (16 + 8, 64 + 16,
    // 32 + 16). Groups of 8 query heads per KV head (served four at a time) with 128 dims;
    // groups of 5 (4 + 1) with 80 dims; groups of 2 with 48.
    Compare(type, {3, 1, 24, 100, 3, 96});
    Compare(type, {16, 2, 128, 70, 3, 40});
    Compare(type, {10, 2, 80, 50, 2, 30});
    Compare(type, {6, 3, 48, 33, 1, 31});
  }
}

// The split-part kernels this CPU runs for heads of `hd` and caches quantized as `quant`: the
// best one and, on an AVX-512 machine, the AVX2 one too.
std::vector<std::pair<std::string, AttentionPartFn>> PartKernels(int64_t hd, KvQuant quant) {
  std::vector<std::pair<std::string, AttentionPartFn>> out;
  CpuFeatures f = DetectCpuFeatures();
  for (int pass = 0; pass < 2; ++pass) {
    const char* name = nullptr;
    AttentionPartFn part = nullptr;
    bool groups = false;
    SelectAttention(f, hd, &name, &groups, quant, &part);
    if (part != nullptr && (out.empty() || out.back().second != part)) {
      EXPECT_TRUE(groups) << name;
      out.emplace_back(name, part);
    }
    f.avx512f = false;
  }
  return out;
}

// A decode row split over its keys (attention_split.h): each part over a range of the keys, for
// every KV head's group of query heads, merged per head, against ref::Attention over all the
// keys; across the sinks' edge and the ring's wrap, for every split count up to the most, with
// every part kernel this CPU runs.
void CompareParts(DType type, const Case& c) {
  const KvQuant quant =
      type == kDTypeI8 ? KvQuant::kQ8 : (type == kDTypeKvQ4 ? KvQuant::kQ4 : KvQuant::kNone);
  const auto kernels = PartKernels(c.hd, quant);
  if (kernels.empty()) GTEST_SKIP() << "no attention kernel with split parts on this CPU";
  ASSERT_EQ(c.rows, 1);
  FilledCache filled(type, c);
  const ref::KvCacheView& cache = filled.view;
  const OpParams& p = cache.params;
  const std::vector<float>& q = filled.q;
  std::vector<float> scores(size_t(c.heads * c.slots)), want(size_t(c.heads * c.hd));
  ref::Attention(q.data(), 1, c.first, cache, scores.data(), want.data(), 0, c.heads);
  const int64_t keys = AttendedKeys(p, c.first);
  const int64_t group = c.heads / c.kv_heads;
  const int64_t floats = AttentionPartFloats(c.hd);
  for (const auto& [name, part] : kernels) {
    for (int splits = 1; splits <= kMaxAttentionSplits; ++splits) {
      std::vector<float> parts(size_t(c.heads * splits * floats), NAN), got(want.size());
      std::fill(scores.begin(), scores.end(), NAN);
      for (int64_t g = 0; g < c.kv_heads; ++g) {
        for (int s = 0; s < splits; ++s) {
          part(q.data(), c.first, cache, scores.data(), g * group, (g + 1) * group,
               AttentionSplitBegin(keys, s, splits), AttentionSplitBegin(keys, s + 1, splits),
               parts.data() + (g * group * splits + s) * floats, splits * floats);
        }
      }
      for (int64_t h = 0; h < c.heads; ++h) {
        MergeAttentionParts(parts.data() + h * splits * floats, splits, c.hd, quant == KvQuant::kQ8,
                            got.data() + h * c.hd);
      }
      for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_NEAR(want[i], got[i], 2e-5f * (1.0f + std::fabs(want[i])))
            << name << " " << DTypeName(type) << " " << CachePolicyName(c.policy) << ", " << splits
            << " parts of " << keys << " keys, element " << i;
      }
    }
  }
}

TEST(FastAttentionTest, SplitPartsMergeToTheReference) {
  for (DType type : {DType::kF16, DType::kF32, kDTypeI8}) {
    // Deep in a static cache; groups of 3 (SmolLM2's) and one KV head of 4 (Gemma 3's shape,
    // 256 dims); 8 query heads a KV head (two passes of 4).
    CompareParts(type, {9, 3, 64, 1100, 1, 1099});
    CompareParts(type, {4, 1, 256, 700, 1, 650});
    CompareParts(type, {16, 2, 128, 300, 1, 299});
    // A window whose ring has wrapped (its keys in two runs), and sinks before a wrapped ring.
    CompareParts(type, {6, 2, 32, 300, 1, 1000, CachePolicy::kSlidingWindow, 280});
    CompareParts(type, {6, 2, 32, 300, 1, 1000, CachePolicy::kSink, 280, 5});
  }
}

TEST(FastAttentionTest, SplitPartsMergeToTheReferenceOnQ4Caches) {
  const DType q4 = kDTypeKvQ4;
  const CachePolicy s = CachePolicy::kStatic, w = CachePolicy::kSlidingWindow;
  // Deep in a static cache: all quantized, or the last keys in the rings (parts cut inside a key
  // group and across the quantized/ring edge); Gemma 3's shape; a group of 5 heads (passes of 4
  // and 1); a wrapped window whose first key is inside a key group (keys in the rings' two runs).
  CompareParts(q4, {9, 3, 64, 2048, 1, 2047, s, 0, 0, 32, 32});
  CompareParts(q4, {9, 3, 64, 2048, 1, 2040, s, 0, 0, 32, 32});
  CompareParts(q4, {4, 1, 256, 768, 1, 700, s, 0, 0, 16, 17});
  CompareParts(q4, {10, 2, 80, 640, 1, 600, s, 0, 0, 16, 20});
  CompareParts(q4, {9, 3, 64, 320, 1, 1517, w, 300, 0, 32, 40});
  // Sinks before a wrapped ring (the sinks' slots rounded up to a key group: 5 → 16, 4 → 16),
  // parts cut between the sinks and the window; Gemma 3's shape.
  const CachePolicy k = CachePolicy::kSink;
  CompareParts(q4, {6, 2, 32, 304, 1, 1000, k, 280, 5, 16, 16});
  CompareParts(q4, {4, 1, 256, 320, 1, 701, k, 300, 4, 16, 17});
}

TEST(FastAttentionTest, SplitCountsDependOnKeysAndGroupsOnly) {
  EXPECT_EQ(AttentionSplits(1, 1), 1);
  EXPECT_EQ(AttentionSplits(kKeysPerAttentionSplit, 1), 1);
  EXPECT_EQ(AttentionSplits(kKeysPerAttentionSplit + 1, 1), 2);
  EXPECT_EQ(AttentionSplits(100 * kKeysPerAttentionSplit, 1), kMaxAttentionSplits);
  // Three groups: at most kMaxAttentionSplits tasks a row, so at most 2 parts each.
  EXPECT_EQ(AttentionSplits(100 * kKeysPerAttentionSplit, 3), kMaxAttentionSplits / 3);
  EXPECT_EQ(AttentionSplits(100 * kKeysPerAttentionSplit, kMaxAttentionSplits + 1), 1);
  // The parts cover the keys in order, none empty.
  const int64_t keys = 5 * kKeysPerAttentionSplit + 3;
  const int splits = AttentionSplits(keys, 1);
  EXPECT_EQ(AttentionSplitBegin(keys, 0, splits), 0);
  EXPECT_EQ(AttentionSplitBegin(keys, splits, splits), keys);
  for (int s = 0; s < splits; ++s) {
    EXPECT_LT(AttentionSplitBegin(keys, s, splits), AttentionSplitBegin(keys, s + 1, splits));
  }
}

TEST(FastAttentionTest, MatchesReferenceOnRings) {
  for (DType type : {DType::kF16, DType::kF32, kDTypeI8}) {
    // Sliding window W = 16 in R = W + C − 1 slots, chunks of C = 5, far past the ring's size.
    Compare(type, {6, 2, 16, 20, 5, 3, CachePolicy::kSlidingWindow, 16});
    Compare(type, {6, 2, 16, 20, 5, 97, CachePolicy::kSlidingWindow, 16});
    Compare(type, {9, 3, 64, 64, 1, 300, CachePolicy::kSlidingWindow, 64});
    // Sinks S = 4 of W = 16.
    Compare(type, {6, 2, 16, 20, 5, 2, CachePolicy::kSink, 16, 4});
    Compare(type, {6, 2, 16, 20, 5, 97, CachePolicy::kSink, 16, 4});
    Compare(type, {9, 3, 64, 67, 1, 500, CachePolicy::kSink, 64, 3});
  }
}

// q4 (KIVI): keys per channel over groups of `group` tokens, values per token, the tokens past
// the last whole group in f32 rings of `recent` slots (≥ group + rows − 1).
TEST(FastAttentionTest, MatchesReferenceOnQ4Caches) {
  const DType q4 = kDTypeKvQ4;
  const CachePolicy s = CachePolicy::kStatic;
  // Decode deep in a static cache: all quantized (the step completes a group), or a group and a
  // half in the rings; the first position (all in the ring).
  Compare(q4, {9, 3, 64, 2048, 1, 2047, s, 0, 0, 32, 32});
  Compare(q4, {9, 3, 64, 2048, 1, 2040, s, 0, 0, 32, 32});
  Compare(q4, {9, 3, 64, 64, 1, 0, s, 0, 0, 32, 32});
  // Prefill steps that straddle the quantized/ring boundary: rows before it read only the
  // quantized cache, rows after it the rings too; rings that wrap inside a step.
  Compare(q4, {6, 2, 16, 64, 13, 20, s, 0, 0, 8, 20});
  Compare(q4, {4, 4, 16, 64, 37, 0, s, 0, 0, 8, 44});
  Compare(q4, {10, 2, 80, 64, 3, 40, s, 0, 0, 16, 20});
  // Group sizes 1 (nothing in the rings after a step) and 3; awkward head sizes: 48 (16 · 3),
  // 128 with groups of 8 query heads (served four at a time), 24 (AVX2 only), 8 and 256.
  Compare(q4, {6, 2, 32, 40, 5, 11, s, 0, 0, 1, 5});
  Compare(q4, {6, 3, 48, 33, 4, 26, s, 0, 0, 3, 7});
  Compare(q4, {16, 2, 128, 72, 2, 60, s, 0, 0, 8, 12});
  Compare(q4, {3, 1, 24, 100, 3, 96, s, 0, 0, 4, 10});
  Compare(q4, {2, 1, 8, 16, 3, 5, s, 0, 0, 4, 6});
  Compare(q4, {4, 1, 256, 64, 2, 33, s, 0, 0, 16, 17});
}

TEST(FastAttentionTest, MatchesReferenceOnQ4Rings) {
  const DType q4 = kDTypeKvQ4;
  const CachePolicy w = CachePolicy::kSlidingWindow;
  // Sliding window W = 16 in R = 20 slots (chunks of C = 5), then far past the ring's size; the
  // window starts inside a key group.
  Compare(q4, {6, 2, 16, 20, 5, 3, w, 16, 0, 4, 8});
  Compare(q4, {6, 2, 16, 20, 5, 97, w, 16, 0, 4, 8});
  Compare(q4, {6, 2, 16, 24, 5, 101, w, 16, 0, 8, 15});
  Compare(q4, {6, 2, 16, 20, 5, 61, w, 16, 0, 1, 5});
  Compare(q4, {9, 3, 64, 64, 1, 300, w, 64, 0, 32, 32});
  Compare(q4, {9, 3, 64, 96, 1, 517, w, 64, 0, 32, 40});
}

// Sink caches on q4: the sinks' slots are rounded up to a key group (kv_policy.h SinkSlots) and
// the ring follows; the sinks are scored with the query turned to its place in the cache.
TEST(FastAttentionTest, MatchesReferenceOnQ4SinkRings) {
  const DType q4 = kDTypeKvQ4;
  const CachePolicy k = CachePolicy::kSink;
  // S = 4 of W = 16 in groups of 4 (the sinks fill a group), chunks of C = 5: 4 + 16 slots.
  Compare(q4, {6, 2, 16, 20, 5, 3, k, 16, 4, 4, 8});
  Compare(q4, {6, 2, 16, 20, 5, 97, k, 16, 4, 4, 8});
  // S = 3 in groups of 8: positions 3 … 7 keep slots 3 … 7; the ring takes 17 of 24 more slots.
  Compare(q4, {6, 2, 16, 32, 5, 2, k, 16, 3, 8, 12});
  Compare(q4, {6, 2, 16, 32, 5, 10, k, 16, 3, 8, 12});
  Compare(q4, {6, 2, 16, 32, 5, 97, k, 16, 3, 8, 12});
  // Decode far past the ring's size, SmolLM2's shape.
  Compare(q4, {9, 3, 64, 96, 1, 500, k, 64, 3, 32, 32});
}

// NEON takes head sizes in multiples of 4 (AVX2: 8); on x86 this skips.
TEST(FastAttentionTest, MatchesReferenceOnHeadSizesOfFour) {
  for (DType type : {DType::kF16, DType::kF32}) {
    Compare(type, {6, 2, 12, 40, 5, 30});
    Compare(type, {6, 3, 20, 20, 5, 97, CachePolicy::kSink, 16, 4});
  }
  Compare(kDTypeKvQ4, {6, 2, 12, 40, 5, 30, CachePolicy::kStatic, 0, 0, 8, 12});
  Compare(kDTypeKvQ4, {6, 3, 20, 24, 5, 97, CachePolicy::kSlidingWindow, 16, 0, 4, 8});
}

TEST(FastAttentionTest, HeadSizesTheSimdKernelCannotTakeUseTheReference) {
  const char* name = nullptr;
  const CpuFeatures f = DetectCpuFeatures();
  EXPECT_EQ(SelectAttention(f, 6, &name), &ref::Attention);
  EXPECT_STREQ(name, "reference");
  SelectAttention(f, 12, &name);
  EXPECT_STREQ(name, f.neon ? "neon" : "reference");
}

}  // namespace
}  // namespace staticlm::cpu
