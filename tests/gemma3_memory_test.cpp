// Gemma 3's hybrid cache on fixed buffers (models/gemma-3-270m-q4_k_m.gguf; skipped when absent):
// the plan gives each sliding layer a ring of W + C − 1 slots and each global layer the whole
// context, from the model's metadata alone, and the report splits the KV bytes by layer kind
// beside what an all-global StaticCache would take. At ctx 32768 the hybrid cache must be at
// most a quarter of that (issue 13). Sizes are checked against the formula, not the code. With
// int8 activations the packed weights are counted too.
#include <cstdio>

#include <gtest/gtest.h>

#include "staticlm/staticlm.h"

namespace {

constexpr const char* kModel = STATICLM_GEMMA_MODEL;
// Gemma 3 270M: 18 layers, every sixth global, window 512, one KV head of 256, f16 cache.
constexpr uint64_t kLayers = 18, kGlobal = 3, kWindow = 512, kHeadBytes = 256 * 2;

bool HaveModel() {
  FILE* f = std::fopen(kModel, "rb");
  if (f != nullptr) std::fclose(f);
  return f != nullptr;
}

staticlm_memory Plan(int context, int chunk, int activation_bits = 0) {
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.max_context = context;
  limits.prefill_chunk = chunk;
  limits.activation_bits = activation_bits;
  limits.isa = "avx2";  // the packed kernels exist for AVX2 and AVX-512 VNNI
  staticlm_memory m{};
  char error[256] = {0};
  EXPECT_EQ(staticlm_plan_memory(kModel, &limits, &m, error, sizeof(error)), STATICLM_OK) << error;
  return m;
}

TEST(Gemma3MemoryTest, HybridCacheIsRingsPlusGlobalLayers) {
  if (!HaveModel()) GTEST_SKIP() << kModel << " is absent (scripts/fetch-model gemma3-270m)";
  for (int context : {2048, 8192, 32768}) {
    const uint64_t chunk = 64, ctx = static_cast<uint64_t>(context);
    staticlm_memory m = Plan(context, static_cast<int>(chunk));
    // k and v per layer; slot counts are multiples of 64 bytes here, so no alignment padding.
    EXPECT_EQ(m.kv_ring_bytes, (kLayers - kGlobal) * 2 * (kWindow + chunk - 1) * kHeadBytes);
    EXPECT_EQ(m.kv_global_bytes, kGlobal * 2 * ctx * kHeadBytes);
    EXPECT_EQ(m.kv_ring_bytes + m.kv_global_bytes, m.kv_cache_bytes);
    EXPECT_EQ(m.kv_all_global_bytes, kLayers * 2 * ctx * kHeadBytes);
    std::printf("ctx %d: hybrid KV %.2f MiB, all-global %.2f MiB (%.1f%%)\n", context,
                m.kv_cache_bytes / 1048576.0, m.kv_all_global_bytes / 1048576.0,
                100.0 * m.kv_cache_bytes / m.kv_all_global_bytes);
  }
  staticlm_memory at_32k = Plan(32768, 64);
  EXPECT_LE(at_32k.kv_cache_bytes * 4, at_32k.kv_all_global_bytes);
}

// A context no longer than the window needs no ring: every layer keeps it all.
TEST(Gemma3MemoryTest, ContextWithinTheWindowKeepsEveryLayerWhole) {
  if (!HaveModel()) GTEST_SKIP() << kModel << " is absent (scripts/fetch-model gemma3-270m)";
  staticlm_memory m = Plan(512, 64);
  EXPECT_EQ(m.kv_ring_bytes, 0u);
  EXPECT_EQ(m.kv_cache_bytes, kLayers * 2 * 512 * kHeadBytes);
}

}  // namespace

// With int8 activations the CPU backend packs the Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q6_K, Q4_K and Q5_K
// matrices its products read (backends/cpu/packed_weights.h); the report counts that copy in
// total_bytes. The file's sizes (gguf-py, MACHINE-FACTS): Q8_0 10 tensors 179,824,640 bytes, Q5_0
// 81 tensors 43,591,680, Q6_K 9 tensors 9,676,800, Q4_K 27 tensors 13,271,040; every matrix has a
// multiple of 16 rows and 64 bytes, so a packed copy is the file's size, Q4_K's 296 / 288 of it
// (13,639,680). The tied head alone (262,144 × 640 Q8_0) is 178,257,920.
TEST(Gemma3MemoryTest, PackedWeightsWithInt8ActivationsAreCounted) {
  if (!HaveModel()) GTEST_SKIP() << kModel << " is absent (scripts/fetch-model gemma3-270m)";
  const staticlm_memory f32 = Plan(2048, 64, 0), int16 = Plan(2048, 64, 16);
  const staticlm_memory int8 = Plan(2048, 64, 8);
  EXPECT_EQ(f32.packed_weights_bytes, 0u);
  EXPECT_EQ(int16.packed_weights_bytes, 0u);
  EXPECT_GE(int8.packed_weights_bytes, 262144ull * 640 / 32 * 34 + 9676800ull + 13639680ull);
  EXPECT_LE(int8.packed_weights_bytes, 179824640ull + 43591680ull + 9676800ull + 13639680ull);
  EXPECT_EQ(int8.total_bytes - f32.total_bytes, int8.packed_weights_bytes);
}
