// The CUDA kernels' arithmetic, checked on the host against the plain reference kernels (the
// oracle of every backend): the headers under backends/cuda/kernels/ are host and device code
// (STATICLM_HD), so this test runs everywhere, with or without a GPU or the CUDA toolkit. It
// covers block decoding of every weight type, K-quant scale unpacking, the activations, RoPE,
// the online-softmax merge, KV reads of every cache policy and type, the attention kernel's
// split-and-combine order (emulated here step by step) and the sampling rules.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "backends/cpu/dequantize.h"
#include "backends/cpu/hadamard.h"
#include "backends/cpu/half.h"
#include "backends/cpu/kquant_scales.h"
#include "backends/cpu/reference_kernels.h"
#include "backends/cuda/kernels/block_decode.h"
#include "backends/cuda/kernels/kernel_math.h"
#include "backends/cuda/kernels/kv_access.h"
#include "backends/cuda/kernels/sample_math.h"
#include "runtime/sampler/rng.h"
#include "runtime/sampler/sampler.h"

namespace staticlm::cuda {
namespace {

using cpu::FloatToBits;

std::vector<float> RandomFloats(std::mt19937& rng, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Byte offsets of a block's f16 scale fields (contract/dtype.h), set to finite values so that
// the decoded numbers are ordinary ones.
std::vector<int> HalfFields(DType t) {
  switch (t) {
    case DType::kQ4_0:
    case DType::kQ5_0:
    case DType::kQ8_0:
      return {0};
    case DType::kQ4_1:
    case DType::kQ5_1:
    case DType::kQ4_K:
    case DType::kQ5_K:
      return {0, 2};
    case DType::kQ6_K:
      return {208};
    default:
      return {};
  }
}

std::vector<uint8_t> RandomRow(std::mt19937& rng, DType t, int64_t n) {
  std::vector<uint8_t> row(DTypeBytes(t, static_cast<uint64_t>(n)));
  for (uint8_t& b : row) b = static_cast<uint8_t>(rng());
  const int64_t block_bytes = GetDTypeInfo(t).block_bytes;
  std::uniform_real_distribution<float> scale(-0.1f, 0.1f);
  for (size_t at = 0; at < row.size(); at += static_cast<size_t>(block_bytes)) {
    for (int field : HalfFields(t)) {
      const uint16_t h = cpu::FloatToHalf(scale(rng));
      row[at + field] = static_cast<uint8_t>(h & 0xff);
      row[at + field + 1] = static_cast<uint8_t>(h >> 8);
    }
  }
  return row;
}

TEST(CudaMathTest, DecodeElementIsTheReferenceDecoderForEveryWeightType) {
  std::mt19937 rng(1);
  const DType types[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ4_0,
                         DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ8_0,
                         DType::kQ4_K, DType::kQ5_K, DType::kQ6_K};
  constexpr int64_t n = 768;  // three K-quant super-blocks, 24 small blocks
  for (DType t : types) {
    SCOPED_TRACE(DTypeName(t));
    ASSERT_TRUE(DecodableWeightType(t));
    ASSERT_EQ(BlockBytes(t), static_cast<int>(GetDTypeInfo(t).block_bytes));
    ASSERT_EQ(BlockElements(t), static_cast<int>(GetDTypeInfo(t).block_elements));
    for (int trial = 0; trial < 20; ++trial) {
      const std::vector<uint8_t> row = RandomRow(rng, t, n);
      std::vector<float> expected(n);
      cpu::DequantizeRow(t, row.data(), n, expected.data());
      for (int64_t i = 0; i < n; ++i) {
        // Bits, so that NaN payloads of random F32/F16/BF16 bytes compare too.
        ASSERT_EQ(FloatToBits(DecodeElement(t, row.data(), i)), FloatToBits(expected[i]))
            << "element " << i;
      }
    }
  }
  EXPECT_FALSE(DecodableWeightType(DType::kI32));
}

TEST(CudaMathTest, KQuantScalesAreTheUnpackedOnes) {
  std::mt19937 rng(2);
  for (int trial = 0; trial < 2000; ++trial) {
    uint8_t packed[12];
    for (uint8_t& b : packed) b = static_cast<uint8_t>(rng());
    uint8_t sc[8], m[8];
    cpu::kquant::UnpackScalesAndMins(packed, sc, m);
    for (int s = 0; s < 8; ++s) {
      int scale = -1, min = -1;
      KQuantScaleMin(packed, s, &scale, &min);
      ASSERT_EQ(scale, sc[s]) << "sub-block " << s;
      ASSERT_EQ(min, m[s]) << "sub-block " << s;
    }
  }
}

TEST(CudaMathTest, ActivationsAreTheReferences) {
  std::mt19937 rng(3);
  std::vector<float> gate = RandomFloats(rng, 4099, -12.0f, 12.0f);
  const std::vector<float> up = RandomFloats(rng, gate.size(), -3.0f, 3.0f);
  std::vector<float> silu = gate, gelu = gate;
  cpu::ref::SiluMul(silu.data(), up.data(), static_cast<int64_t>(gate.size()));
  cpu::ref::GeluMul(gelu.data(), up.data(), static_cast<int64_t>(gate.size()));
  for (size_t i = 0; i < gate.size(); ++i) {
    ASSERT_EQ(SiluMulValue(gate[i], up[i]), silu[i]) << i;
    ASSERT_EQ(GeluMulValue(gate[i], up[i]), gelu[i]) << i;
  }
}

// The RoPE kernel's loop: a thread per (row, pair), rotating that pair in every head; pairs
// of the first rd elements (partial RoPE; rd = hd: all).
void EmulatedRope(float* x, int64_t rows, int64_t heads, int64_t hd, int64_t rd, int32_t first,
                  float base, const float* factors, float scale, bool halves) {
  const int64_t half = rd / 2;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < half; ++i) {
      float c = 0.0f, s = 0.0f;
      RopeCosSin(static_cast<double>(first + r), i, rd, base,
                 factors != nullptr ? factors[i] : 1.0f, scale, &c, &s);
      const int64_t a = halves ? i : 2 * i, b = a + (halves ? half : 1);
      for (int64_t h = 0; h < heads; ++h) {
        float* head = x + (r * heads + h) * hd;
        const float x0 = head[a], x1 = head[b];
        head[a] = x0 * c - x1 * s;
        head[b] = x0 * s + x1 * c;
      }
    }
  }
}

TEST(CudaMathTest, RopeIsTheReferenceForEveryForm) {
  std::mt19937 rng(4);
  constexpr int64_t rows = 5, heads = 3, hd = 64;
  const std::vector<float> factors = RandomFloats(rng, hd / 2, 1.0f, 8.0f);
  for (bool halves : {false, true}) {
    for (const float* f :
         {static_cast<const float*>(nullptr), static_cast<const float*>(factors.data())}) {
      for (float scale : {1.0f, 1.19f}) {
        for (int64_t rd : {hd, int64_t{48}}) {  // partial RoPE: 48 of 64
          const std::vector<float> x = RandomFloats(rng, rows * heads * hd, -2.0f, 2.0f);
          std::vector<float> expected = x, got = x;
          if (f == nullptr && scale == 1.0f && rd == hd) {
            (halves ? cpu::ref::RopeHalves : cpu::ref::Rope)(expected.data(), rows, heads, hd, 3001,
                                                             500000.0f);
          } else {
            cpu::ref::RopeScaled(expected.data(), rows, heads, hd, rd, 3001, 500000.0f, f, scale,
                                 halves);
          }
          EmulatedRope(got.data(), rows, heads, hd, rd, 3001, 500000.0f, f, scale, halves);
          for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(got[i], expected[i]) << i;
        }
      }
    }
  }
}

TEST(CudaMathTest, SinkQueryRotationIsTheReferences) {
  std::mt19937 rng(9);
  constexpr int64_t hd = 64;
  std::vector<float> factors(hd / 2);  // a sink cache of a model with RoPE factors
  for (size_t i = 0; i < factors.size(); ++i) factors[i] = 1.0f + 0.75f * static_cast<float>(i);
  for (const float* f :
       {static_cast<const float*>(nullptr), static_cast<const float*>(factors.data())}) {
    for (bool halves : {false, true}) {
      for (int32_t rope_dims : {0, 48}) {  // the whole head, and partial RoPE (48 of 64)
        OpParams p;
        p.head_dim = hd;
        p.rope_dims = rope_dims;
        p.rope_base = 10000.0f;
        p.rope_halves = halves;
        for (int64_t delta : {int64_t{0}, int64_t{-1}, int64_t{-37}, int64_t{-4000}}) {
          const std::vector<float> q = RandomFloats(rng, hd, -2.0f, 2.0f);
          std::vector<float> expected(hd), got(hd);
          cpu::ref::RotateQuery(q.data(), p, delta, f, expected.data());
          for (int64_t i = 0; i < hd / 2; ++i)
            RotateQueryPair(q.data(), i, p, delta, f, got.data());
          for (int64_t d = 0; d < hd; ++d) {
            ASSERT_EQ(got[d], expected[d])
                << "delta " << delta << " halves " << halves << " dims " << rope_dims;
          }
        }
      }
    }
  }
}

TEST(CudaMathTest, MergedPartialSoftmaxesAreTheSoftmax) {
  std::mt19937 rng(5);
  constexpr int n = 301, width = 8;
  std::vector<float> scores = RandomFloats(rng, n, -6.0f, 6.0f);
  const std::vector<float> values = RandomFloats(rng, n * width, -1.0f, 1.0f);
  std::vector<float> expected(width, 0.0f), weights = scores;
  cpu::ref::Softmax(weights.data(), n);
  for (int t = 0; t < n; ++t) {
    for (int d = 0; d < width; ++d) expected[d] += weights[t] * values[t * width + d];
  }
  for (int parts : {1, 2, 7, 50, 400}) {  // 400: some parts empty
    SoftmaxPartial all{-INFINITY, 0.0f};
    std::vector<float> acc(width, 0.0f);
    const int chunk = (n + parts - 1) / parts;
    for (int part = 0; part < parts; ++part) {
      SoftmaxPartial s{-INFINITY, 0.0f};
      std::vector<float> part_acc(width, 0.0f);
      for (int t = part * chunk; t < std::min(n, (part + 1) * chunk); ++t) {
        float fa = 0.0f, fb = 0.0f;
        MergeSoftmax(&s, {scores[t], 1.0f}, &fa, &fb);
        for (int d = 0; d < width; ++d) {
          part_acc[d] = part_acc[d] * fa + values[t * width + d] * fb;
        }
      }
      float fa = 0.0f, fb = 0.0f;
      MergeSoftmax(&all, s, &fa, &fb);
      for (int d = 0; d < width; ++d) acc[d] = acc[d] * fa + part_acc[d] * fb;
    }
    for (int d = 0; d < width; ++d) {
      EXPECT_NEAR(acc[d] / all.sum, expected[d], 2e-6f) << parts << " parts, dim " << d;
    }
  }
}

// One layer's cache for one sequence in host memory, for the reference and the kernels' views.
struct HostCache {
  std::vector<uint8_t> k, v;
  std::vector<float> k_side, v_side, k_recent, v_recent;
  cpu::ref::KvCacheView ref;

  HostCache(const OpParams& p, DType type) {
    const int64_t cells = int64_t{p.n_kv_heads} * p.cache_slots * p.head_dim;
    const uint64_t bytes = DTypeBytes(type, static_cast<uint64_t>(cells));
    k.assign(bytes, 0);
    v.assign(bytes, 0);
    if (p.kv_quant == KvQuant::kQ8) {
      k_side.assign(static_cast<size_t>(p.n_kv_heads) * p.cache_slots, 0.0f);
      v_side = k_side;
    } else if (p.kv_quant == KvQuant::kQ4) {
      k_side.assign(
          static_cast<size_t>(p.n_kv_heads) * (p.cache_slots / p.kv_group) * 2 * p.head_dim, 0.0f);
      v_side.assign(static_cast<size_t>(p.n_kv_heads) * p.cache_slots * 2, 0.0f);
      k_recent.assign(static_cast<size_t>(p.n_kv_heads) * p.recent_slots * p.head_dim, 0.0f);
      v_recent = k_recent;
    }
    auto at = [](std::vector<float>& f) { return f.empty() ? nullptr : f.data(); };
    ref = {p, type, k.data(), v.data(), at(k_side), at(v_side), at(k_recent), at(v_recent)};
  }

  KvView View() const {
    return {ref.params, ref.type,     ref.k,        ref.v,           ref.k_side,
            ref.v_side, ref.k_recent, ref.v_recent, ref.rope_factors};
  }
};

// The attention kernels' order of work for one (row, head): the query (rotated for the sinks,
// Hadamard for q8), `splits` parts of the attended positions, `warps` warps taking every
// warps-th position of a part, warp partials merged, then the parts merged. attention.cu's
// decode kernel: 4 warps, 1 to 32 splits; attention_prefill.cu's tiled kernel: one warp per
// row, folding every attended position in order (1 warp, 1 split).
void EmulatedAttentionHead(const float* qh, int64_t position, int64_t step_end, const KvView& c,
                           int64_t h, int splits, int warps, float* out) {
  const OpParams& p = c.params;
  const int64_t hd = p.head_dim, g = h / (p.n_heads / p.n_kv_heads);
  const AttendedSpans span = Attended(p, position);
  float q[256], q_sink[256];
  for (int64_t d = 0; d < hd; ++d) q[d] = qh[d];
  for (int64_t i = 0; i < hd / 2; ++i) {
    RotateQueryPair(qh, i, p, span.cache_position - position, c.rope_factors, q_sink);
  }
  if (p.kv_quant == KvQuant::kQ8) {
    cpu::Hadamard(q, hd);
    cpu::Hadamard(q_sink, hd);
  }
  const int64_t count = AttendedCount(span), chunk = (count + splits - 1) / splits;
  SoftmaxPartial all{-INFINITY, 0.0f};
  std::vector<float> acc(hd, 0.0f);
  for (int split = 0; split < splits; ++split) {
    for (int warp = 0; warp < warps; ++warp) {
      SoftmaxPartial s{-INFINITY, 0.0f};
      std::vector<float> part(hd, 0.0f);
      for (int64_t n = split * chunk + warp; n < std::min(count, (split + 1) * chunk); n += warps) {
        const int64_t t = AttendedPosition(span, n);
        const float* qn = n < span.sink_end ? q_sink : q;
        float dot = 0.0f;
        for (int64_t d = 0; d < hd; ++d) dot += qn[d] * KvLoadKey(c, step_end, t, g, d);
        float fa = 0.0f, fb = 0.0f;
        MergeSoftmax(&s, {dot * p.scale, 1.0f}, &fa, &fb);
        for (int64_t d = 0; d < hd; ++d) {
          part[d] = part[d] * fa + KvLoadValue(c, step_end, t, g, d) * fb;
        }
      }
      float fa = 0.0f, fb = 0.0f;
      MergeSoftmax(&all, s, &fa, &fb);
      for (int64_t d = 0; d < hd; ++d) acc[d] = acc[d] * fa + part[d] * fb;
    }
  }
  for (int64_t d = 0; d < hd; ++d) out[d] = acc[d] / all.sum;
  if (p.kv_quant == KvQuant::kQ8) cpu::Hadamard(out, hd);
}

struct CacheCase {
  const char* name;
  CachePolicy policy;
  KvQuant quant;
  DType type;
};

// Chunks of a prefill of 42 positions, ragged, up to 8 rows.
const int32_t kSteps[] = {8, 3, 8, 1, 7, 8, 1, 1, 5};

const CacheCase kCacheCases[] = {
    {"static f16", CachePolicy::kStatic, KvQuant::kNone, DType::kF16},
    {"static f32", CachePolicy::kStatic, KvQuant::kNone, DType::kF32},
    {"static q8", CachePolicy::kStatic, KvQuant::kQ8, kDTypeI8},
    {"static q4", CachePolicy::kStatic, KvQuant::kQ4, kDTypeKvQ4},
    {"sliding f16", CachePolicy::kSlidingWindow, KvQuant::kNone, DType::kF16},
    {"sliding q8", CachePolicy::kSlidingWindow, KvQuant::kQ8, kDTypeI8},
    {"sliding q4", CachePolicy::kSlidingWindow, KvQuant::kQ4, kDTypeKvQ4},
    {"sink f32", CachePolicy::kSink, KvQuant::kNone, DType::kF32},
    {"sink q8", CachePolicy::kSink, KvQuant::kQ8, kDTypeI8},
    {"sink q4", CachePolicy::kSink, KvQuant::kQ4, kDTypeKvQ4},
};

OpParams CaseParams(const CacheCase& c, int32_t chunk) {
  OpParams p;
  p.n_heads = 4;
  p.n_kv_heads = 2;
  p.head_dim = 32;
  p.rope_base = 10000.0f;
  p.scale = 1.0f / std::sqrt(32.0f);
  p.cache_policy = c.policy;
  p.kv_quant = c.quant;
  p.window = 16;
  // 3 sinks: a q4 Sink ring then starts after them rounded up to its group of 4 (SinkSlots).
  p.sinks = c.policy == CachePolicy::kSink ? 3 : 0;
  p.kv_group = c.quant == KvQuant::kQ4 ? 4 : 0;
  p.recent_slots = c.quant == KvQuant::kQ4 ? 12 : 0;  // ≥ group + chunk − 1
  // Ring caches: W + chunk − 1 slots, rounded up to whole q4 groups (a q4 Sink ring: 24 − 4 ≥
  // W − S + chunk − 1).
  p.cache_slots = c.policy == CachePolicy::kStatic ? 64 : (p.window + chunk - 1 + 3) / 4 * 4;
  return p;
}

TEST(CudaMathTest, KvReadsAndSplitAttentionAreTheReferenceForEveryCache) {
  constexpr int32_t chunk = 8;
  for (const CacheCase& cc : kCacheCases) {
    SCOPED_TRACE(cc.name);
    const OpParams p = CaseParams(cc, chunk);
    HostCache cache(p, cc.type);
    std::mt19937 rng(6);
    const int64_t hd = p.head_dim, kv_width = int64_t{p.n_kv_heads} * hd;
    std::vector<float> scores(static_cast<size_t>(p.n_heads) * p.cache_slots);
    int32_t first = 0;
    for (int32_t rows : kSteps) {
      const std::vector<float> k = RandomFloats(rng, rows * kv_width, -1.0f, 1.0f);
      const std::vector<float> v = RandomFloats(rng, rows * kv_width, -1.0f, 1.0f);
      const std::vector<float> q = RandomFloats(rng, rows * p.n_heads * hd, -1.0f, 1.0f);
      cpu::ref::KvStore(k.data(), v.data(), rows, first, cache.ref);
      std::vector<float> expected(q.size()), got(q.size());
      cpu::ref::Attention(q.data(), rows, first, cache.ref, scores.data(), expected.data(), 0,
                          p.n_heads);
      const KvView view = cache.View();
      const int64_t step_end = first + rows;
      for (int64_t r = 0; r < rows; ++r) {
        const AttendedSpans span = Attended(p, first + r);
        for (int64_t n = 0; n < AttendedCount(span); ++n) {
          const int64_t t = AttendedPosition(span, n);
          for (int64_t g = 0; g < p.n_kv_heads; ++g) {
            for (int64_t d = 0; d < hd; ++d) {
              ASSERT_EQ(KvLoadKey(view, step_end, t, g, d),
                        cpu::ref::LoadKey(cache.ref, step_end, t, g, d));
              ASSERT_EQ(KvLoadValue(view, step_end, t, g, d),
                        cpu::ref::LoadValue(cache.ref, step_end, t, g, d));
            }
          }
        }
        for (const auto& [splits, warps] : {std::pair{1, 1}, {1, 4}, {3, 4}, {32, 4}}) {
          for (int64_t h = 0; h < p.n_heads; ++h) {
            const int64_t at = (r * p.n_heads + h) * hd;
            EmulatedAttentionHead(q.data() + at, first + r, step_end, view, h, splits, warps,
                                  got.data() + at);
            for (int64_t d = 0; d < hd; ++d) {
              ASSERT_NEAR(got[at + d], expected[at + d], 1e-5f)
                  << "position " << first + r << ", head " << h << ", splits " << splits;
            }
          }
        }
      }
      first += rows;
    }
  }
}

// The KV store kernels' writes (kv_store.cu) for one sequence: StoreKernel's row per (row, KV
// head), then Q4GroupKernel's groups, keys per channel pair and values per token.
void EmulatedStoreRow(const float* src, const OpParams& p, DType type, int64_t row, uint8_t* cache,
                      float* side) {
  const int64_t hd = p.head_dim;
  if (p.kv_quant == KvQuant::kNone) {
    for (int64_t d = 0; d < hd; ++d) {
      if (type == DType::kF16) {
        reinterpret_cast<uint16_t*>(cache)[row * hd + d] = cpu::FloatToHalf(src[d]);
      } else {
        reinterpret_cast<float*>(cache)[row * hd + d] = src[d];
      }
    }
    return;
  }
  float x[256];
  for (int64_t d = 0; d < hd; ++d) x[d] = src[d];
  cpu::Hadamard(x, hd);
  float amax = 0.0f;
  for (int64_t d = 0; d < hd; ++d) amax = std::fmax(amax, std::fabs(x[d]));
  const float s = amax / 127.0f, inv = s > 0.0f ? 1.0f / s : 0.0f;
  for (int64_t d = 0; d < hd; ++d) {
    reinterpret_cast<int8_t*>(cache)[row * hd + d] = KvCode8(x[d], inv);
  }
  side[row] = s;
}

void EmulatedQuantizeGroup(const KvView& c, int64_t g, int64_t first) {
  const OpParams& p = c.params;
  const int64_t hd = p.head_dim, group = p.kv_group, slot0 = KvSlot(p, first);
  auto recent = [&](const float* ring, int64_t t) {
    return ring + (g * p.recent_slots + t % p.recent_slots) * hd;
  };
  float* k_params = c.k_side + (g * (p.cache_slots / group) + slot0 / group) * 2 * hd;
  for (int64_t d = 0; d < hd; ++d) {
    float lo = recent(c.k_recent, first)[d], hi = lo;
    for (int64_t t = first; t < first + group; ++t) {
      lo = std::fmin(lo, recent(c.k_recent, t)[d]);
      hi = std::fmax(hi, recent(c.k_recent, t)[d]);
    }
    k_params[d] = (hi - lo) / 15.0f;
    k_params[hd + d] = lo;
  }
  for (int64_t t = first; t < first + group; ++t) {
    const int64_t row = g * p.cache_slots + slot0 + (t - first);
    const float* kx = recent(c.k_recent, t);
    const float* vx = recent(c.v_recent, t);
    float lo = vx[0], hi = vx[0];
    for (int64_t d = 0; d < hd; ++d) {
      lo = std::fmin(lo, vx[d]);
      hi = std::fmax(hi, vx[d]);
    }
    const float scale = (hi - lo) / 15.0f;
    c.v_side[row * 2] = scale;
    c.v_side[row * 2 + 1] = lo;
    for (int64_t pair = 0; pair < hd / 2; ++pair) {
      c.k[(row * hd) / 2 + pair] = static_cast<uint8_t>(
          KvCode4(kx[2 * pair], k_params[2 * pair], k_params[hd + 2 * pair]) |
          (KvCode4(kx[2 * pair + 1], k_params[2 * pair + 1], k_params[hd + 2 * pair + 1]) << 4));
      c.v[(row * hd) / 2 + pair] = static_cast<uint8_t>(
          KvCode4(vx[2 * pair], scale, lo) | (KvCode4(vx[2 * pair + 1], scale, lo) << 4));
    }
  }
}

void EmulatedKvStore(const float* k, const float* v, int64_t rows, int32_t first_position,
                     const KvView& c) {
  const OpParams& p = c.params;
  const int64_t hd = p.head_dim;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t position = first_position + r;
    for (int64_t g = 0; g < p.n_kv_heads; ++g) {
      const float* ks = k + (r * p.n_kv_heads + g) * hd;
      const float* vs = v + (r * p.n_kv_heads + g) * hd;
      if (p.kv_quant == KvQuant::kQ4) {
        const int64_t ring = (g * p.recent_slots + position % p.recent_slots) * hd;
        std::memcpy(c.k_recent + ring, ks, static_cast<size_t>(hd) * sizeof(float));
        std::memcpy(c.v_recent + ring, vs, static_cast<size_t>(hd) * sizeof(float));
        continue;
      }
      const int64_t row = g * p.cache_slots + KvSlot(p, position);
      EmulatedStoreRow(ks, p, c.type, row, c.k, c.k_side);
      EmulatedStoreRow(vs, p, c.type, row, c.v, c.v_side);
    }
  }
  if (p.kv_quant != KvQuant::kQ4) return;
  const int64_t step_end = first_position + rows;
  for (int64_t first = first_position / p.kv_group * p.kv_group; first + p.kv_group <= step_end;
       first += p.kv_group) {
    for (int64_t g = 0; g < p.n_kv_heads; ++g) EmulatedQuantizeGroup(c, g, first);
  }
}

TEST(CudaMathTest, KvStoresAreTheReferenceBitForBitForEveryCache) {
  for (const CacheCase& cc : kCacheCases) {
    SCOPED_TRACE(cc.name);
    const OpParams p = CaseParams(cc, 8);
    HostCache expected(p, cc.type), got(p, cc.type);
    std::mt19937 rng(8);
    const int64_t kv_width = int64_t{p.n_kv_heads} * p.head_dim;
    int32_t first = 0;
    for (int32_t rows : kSteps) {
      const std::vector<float> k = RandomFloats(rng, rows * kv_width, -2.0f, 2.0f);
      const std::vector<float> v = RandomFloats(rng, rows * kv_width, -2.0f, 2.0f);
      cpu::ref::KvStore(k.data(), v.data(), rows, first, expected.ref);
      EmulatedKvStore(k.data(), v.data(), rows, first, got.View());
      ASSERT_EQ(got.k, expected.k) << "after position " << first + rows;
      ASSERT_EQ(got.v, expected.v);
      ASSERT_EQ(got.k_side, expected.k_side);
      ASSERT_EQ(got.v_side, expected.v_side);
      ASSERT_EQ(got.k_recent, expected.k_recent);
      ASSERT_EQ(got.v_recent, expected.v_recent);
      first += rows;
    }
  }
}

// The sampling kernel's choice (sample.cu): k rounds of "the best candidate strictly after the
// previous one", then SampleDraw (top-p, min-p, the draw); greedy is the first round alone.
int32_t EmulatedSample(const std::vector<float>& logits, int32_t k, float temperature,
                       double uniform, float top_p = 1.0f, float min_p = 0.0f) {
  const int32_t vocab = static_cast<int32_t>(logits.size());
  std::vector<float> scores;
  std::vector<int32_t> ids;
  for (int32_t round = 0; round < (k == 0 ? 1 : k); ++round) {
    int32_t best = -1;
    for (int32_t i = 0; i < vocab; ++i) {
      if (!ids.empty() && !SampleBefore(scores.back(), ids.back(), logits[i], i)) continue;
      if (best < 0 || SampleBefore(logits[i], i, logits[best], best)) best = i;
    }
    scores.push_back(logits[best]);
    ids.push_back(best);
  }
  if (k == 0) return ids[0];
  return SampleDraw(scores.data(), ids.data(), k, temperature, top_p, min_p, uniform);
}

TEST(CudaMathTest, SamplingIsTheHostSamplers) {
  constexpr int32_t vocab = 1000;
  Sampler sampler;
  ASSERT_TRUE(sampler.Init(vocab).ok());
  std::mt19937 rng(7);
  int draws_differing_from_greedy = 0;
  for (int trial = 0; trial < 60; ++trial) {
    std::vector<float> logits = RandomFloats(rng, vocab, -4.0f, 4.0f);
    for (float& x : logits) x = std::round(x * 2.0f) / 2.0f;  // many ties
    logits[rng() % vocab] = -INFINITY;
    for (int32_t k : {0, 1, 5, 64}) {
      SamplerParams params;
      params.temperature = k == 0 ? 0.0f : 0.5f + static_cast<float>(trial % 4) * 0.4f;
      params.top_k = k;
      params.top_p = 1.0f;
      params.min_p = 0.0f;
      const uint64_t seed = 1000 + static_cast<uint64_t>(trial);
      sampler.Seed(seed);
      int32_t expected = -1;
      ASSERT_TRUE(sampler.Sample(logits.data(), nullptr, 0, params, &expected).ok());
      Rng same(seed);
      const int32_t got = EmulatedSample(logits, k, params.temperature, same.NextUnit());
      ASSERT_EQ(got, expected) << "trial " << trial << ", top_k " << k;
      if (k > 1 && got != EmulatedSample(logits, 0, 0.0f, 0.0)) ++draws_differing_from_greedy;
    }
  }
  EXPECT_GT(draws_differing_from_greedy, 10);  // the draw was exercised, not only the argmax
}

// Top-p and min-p after top-k, as the kernel does them, against the host Sampler: the same
// token for the same logits, parameters and draw, exactly (the arithmetic is the host's: f32
// weights, double sums in the same order), over many seeds, vocabularies that are not powers
// of two, coarse logits (ties, also at the filters' edges), p close to 0 and to 1, min_p up to
// 1, and rows whose weights are exactly 1 (top_p · Σw reached exactly).
TEST(CudaMathTest, TopPAndMinPAreTheHostSamplers) {
  struct Filter {
    float top_p, min_p;
  };
  const Filter filters[] = {{1e-7f, 0.0f},       {0.25f, 0.0f}, {0.5f, 0.0f}, {0.9f, 0.0f},
                            {0.99999994f, 0.0f}, {1.0f, 0.05f}, {1.0f, 0.5f}, {1.0f, 1.0f},
                            {0.95f, 0.05f},      {0.6f, 0.3f}};
  std::mt19937 rng(11);
  int changed_by_the_filters = 0, compared = 0;
  for (int32_t vocab : {65, 257, 1000, 4099}) {
    Sampler sampler;
    ASSERT_TRUE(sampler.Init(vocab).ok());
    for (int trial = 0; trial < 12; ++trial) {
      std::vector<float> logits = RandomFloats(rng, size_t(vocab), -4.0f, 4.0f);
      if (trial % 3 == 1) {
        for (float& x : logits) x = std::round(x * 2.0f) / 2.0f;  // many ties
      } else if (trial % 3 == 2) {
        for (float& x : logits) x = x > 2.0f ? 3.0f : -1.0f;  // tied best, weights exactly 1
      }
      logits[rng() % size_t(vocab)] = -INFINITY;
      for (int32_t k : {1, 2, 17, 64}) {
        for (const Filter& f : filters) {
          SamplerParams params;
          params.temperature = 0.5f + static_cast<float>(trial % 4) * 0.4f;
          params.top_k = k;
          params.top_p = f.top_p;
          params.min_p = f.min_p;
          const uint64_t seed = uint64_t(vocab) * 1000 + uint64_t(trial) * 16 + uint64_t(k);
          sampler.Seed(seed);
          int32_t expected = -1;
          ASSERT_TRUE(sampler.Sample(logits.data(), nullptr, 0, params, &expected).ok());
          const double u = Rng(seed).NextUnit();
          const int32_t got =
              EmulatedSample(logits, k, params.temperature, u, params.top_p, params.min_p);
          ASSERT_EQ(got, expected) << "vocab " << vocab << " trial " << trial << " top_k " << k
                                   << " top_p " << f.top_p << " min_p " << f.min_p;
          ++compared;
          changed_by_the_filters += got != EmulatedSample(logits, k, params.temperature, u);
        }
      }
    }
  }
  std::printf("%d draws compared, %d changed by top-p or min-p\n", compared,
              changed_by_the_filters);
  EXPECT_GT(changed_by_the_filters * 5, compared);  // the filters were exercised
}

// SampleTopPCount at its edges, with weights exactly 1: the shortest prefix reaching p (reaching
// it exactly is enough), at least one, all of them at p = 1.
TEST(CudaMathTest, TopPCountKeepsTheShortestPrefixReachingP) {
  const float scores[8] = {2.0f, 2.0f, 2.0f, 2.0f, 2.0f, 2.0f, 2.0f, 2.0f};
  EXPECT_EQ(SampleTopPCount(scores, 8, 2.0f, 1.0f, 0.5f), 4);
  EXPECT_EQ(SampleTopPCount(scores, 8, 2.0f, 1.0f, 0.50001f), 5);
  EXPECT_EQ(SampleTopPCount(scores, 8, 2.0f, 1.0f, 1e-7f), 1);
  EXPECT_EQ(SampleTopPCount(scores, 8, 2.0f, 1.0f, 0.99999994f), 8);
  EXPECT_EQ(SampleTopPCount(scores, 8, 2.0f, 1.0f, 1.0f), 8);
}

}  // namespace
}  // namespace staticlm::cuda
