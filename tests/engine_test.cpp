// The runtime's step semantics through the C API, on a tiny random-weight Llama written by the
// test support (fast; the real model's numbers are checked by golden_test).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/staticlm.h"
#include "tests/support/context_helpers.h"
#include "tests/support/gguf_writer.h"
#include "tests/support/temp_path.h"

namespace {

using Context = staticlm::test::ContextPtr;

class EngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = new std::string(staticlm::test::TempPath("engine_tiny.gguf"));
    staticlm::test::TinyLlamaOptions options;
    options.weight_type = staticlm::DType::kQ4_1;
    options.embedding_type = staticlm::DType::kQ8_0;
    ASSERT_TRUE(staticlm::test::WriteTinyLlama(path_->c_str(), options).ok());
  }
  static void TearDownTestSuite() { delete path_; }

  static Context Create(int ctx_len, int chunk, staticlm_kv_type kv = STATICLM_KV_F32,
                        int threads = 1, bool reference = false, const char* isa = nullptr) {
    staticlm_limits limits;
    staticlm_limits_default(&limits);
    limits.threads = threads;
    limits.reference_kernels = reference ? 1 : 0;
    limits.isa = isa;
    limits.max_context = ctx_len;
    limits.prefill_chunk = chunk;
    limits.kv_type = kv;
    staticlm_context* ctx = nullptr;
    char error[256] = {0};
    EXPECT_EQ(staticlm_create(path_->c_str(), &limits, &ctx, error, sizeof(error)), STATICLM_OK)
        << error;
    return Context(ctx);
  }

  static std::vector<float> Logits(staticlm_context* ctx) {
    staticlm_model_info info;
    staticlm_get_model_info(ctx, &info);
    const float* l = staticlm_logits(ctx);
    return std::vector<float>(l, l + info.vocab_size);
  }

  static std::vector<int32_t> Prompt(int n) {
    std::vector<int32_t> ids;
    for (int i = 0; i < n; ++i) ids.push_back(20 + (i * 37) % 250);
    return ids;
  }

  static std::string* path_;
};
std::string* EngineTest::path_ = nullptr;

TEST_F(EngineTest, ChunkSizeDoesNotChangeTheLogits) {
  auto prompt = Prompt(23);
  std::vector<float> expected;
  for (int chunk : {64, 1, 5, 23}) {
    Context ctx = Create(64, chunk);
    ASSERT_EQ(staticlm_prefill(ctx.get(), prompt.data(), prompt.size()), STATICLM_OK);
    EXPECT_EQ(staticlm_position(ctx.get()), 23);
    auto logits = Logits(ctx.get());
    if (expected.empty()) {
      expected = logits;
    } else {
      EXPECT_EQ(logits, expected) << "chunk " << chunk;  // rows are computed independently
    }
  }
}

TEST_F(EngineTest, DecodeEqualsPrefillOfTheSameToken) {
  auto prompt = Prompt(9);
  Context a = Create(32, 16), b = Create(32, 16);
  ASSERT_EQ(staticlm_prefill(a.get(), prompt.data(), 9), STATICLM_OK);
  ASSERT_EQ(staticlm_prefill(b.get(), prompt.data(), 8), STATICLM_OK);
  ASSERT_EQ(staticlm_decode(b.get(), prompt[8]), STATICLM_OK);
  EXPECT_EQ(Logits(a.get()), Logits(b.get()));
}

TEST_F(EngineTest, ContextFullLeavesTheCacheAsItWas) {
  Context ctx = Create(16, 4);
  auto prompt = Prompt(16);
  ASSERT_EQ(staticlm_prefill(ctx.get(), prompt.data(), 10), STATICLM_OK);
  auto before = Logits(ctx.get());
  EXPECT_EQ(staticlm_prefill(ctx.get(), prompt.data() + 10, 7), STATICLM_CONTEXT_FULL);
  EXPECT_NE(std::string(staticlm_last_error(ctx.get())).find("context"), std::string::npos);
  EXPECT_EQ(staticlm_position(ctx.get()), 10);
  EXPECT_EQ(Logits(ctx.get()), before);
  // The cache still holds the first 10 tokens: continuing gives what one prefill gives.
  ASSERT_EQ(staticlm_prefill(ctx.get(), prompt.data() + 10, 6), STATICLM_OK);
  Context fresh = Create(16, 4);
  ASSERT_EQ(staticlm_prefill(fresh.get(), prompt.data(), 16), STATICLM_OK);
  EXPECT_EQ(Logits(ctx.get()), Logits(fresh.get()));
  EXPECT_EQ(staticlm_decode(ctx.get(), prompt[0]), STATICLM_CONTEXT_FULL);
}

TEST_F(EngineTest, BadTokenIdsAreRejectedWithoutSideEffects) {
  Context ctx = Create(32, 8);
  auto prompt = Prompt(4);
  ASSERT_EQ(staticlm_prefill(ctx.get(), prompt.data(), 4), STATICLM_OK);
  staticlm_model_info info;
  staticlm_get_model_info(ctx.get(), &info);
  int32_t bad[3] = {1, info.vocab_size, 2};
  EXPECT_EQ(staticlm_prefill(ctx.get(), bad, 3), STATICLM_INVALID_ARGUMENT);
  int32_t negative = -1;
  EXPECT_EQ(staticlm_decode(ctx.get(), negative), STATICLM_INVALID_ARGUMENT);
  EXPECT_EQ(staticlm_position(ctx.get()), 4);
  EXPECT_EQ(staticlm_prefill(ctx.get(), prompt.data(), 0), STATICLM_INVALID_ARGUMENT);
}

TEST_F(EngineTest, ResetStartsOver) {
  Context ctx = Create(32, 8);
  auto prompt = Prompt(12);
  ASSERT_EQ(staticlm_prefill(ctx.get(), prompt.data(), 12), STATICLM_OK);
  auto first = Logits(ctx.get());
  ASSERT_EQ(staticlm_decode(ctx.get(), 5), STATICLM_OK);
  staticlm_reset(ctx.get());
  EXPECT_EQ(staticlm_position(ctx.get()), 0);
  EXPECT_EQ(staticlm_logits(ctx.get()), nullptr);
  size_t n = 99;
  staticlm_history(ctx.get(), &n);
  EXPECT_EQ(n, 0u);
  ASSERT_EQ(staticlm_prefill(ctx.get(), prompt.data(), 12), STATICLM_OK);
  EXPECT_EQ(Logits(ctx.get()), first);
}

TEST_F(EngineTest, SamplingBeforePrefillIsAnError) {
  Context ctx = Create(32, 8);
  staticlm_sampler s;
  staticlm_sampler_default(&s);
  int32_t token = 0;
  EXPECT_EQ(staticlm_sample(ctx.get(), &s, &token), STATICLM_INVALID_STATE);
}

std::vector<int32_t> SampleRun(staticlm_context* ctx, uint64_t seed, int n) {
  staticlm_reset(ctx);
  staticlm_seed(ctx, seed);
  staticlm_sampler s;
  staticlm_sampler_default(&s);
  s.temperature = 1.5f;
  s.top_k = 0;
  s.top_p = 1.0f;
  s.min_p = 0.0f;
  int32_t token = 1;
  std::vector<int32_t> out;
  EXPECT_EQ(staticlm_decode(ctx, 30), STATICLM_OK);
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(staticlm_sample(ctx, &s, &token), STATICLM_OK);
    out.push_back(token);
    EXPECT_EQ(staticlm_decode(ctx, token), STATICLM_OK);
  }
  return out;
}

TEST_F(EngineTest, SameSeedSameTokensBitForBit) {
  Context ctx = Create(64, 8);
  auto a = SampleRun(ctx.get(), 7, 40);
  auto b = SampleRun(ctx.get(), 7, 40);
  auto c = SampleRun(ctx.get(), 8, 40);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  Context other = Create(64, 3);  // another context and chunk size: same tokens
  EXPECT_EQ(SampleRun(other.get(), 7, 40), a);
}

// Work is split so that each output is computed by one task in a fixed order: the thread count
// must not change a single bit.
TEST_F(EngineTest, ThreadCountDoesNotChangeTheLogits) {
  auto prompt = Prompt(37);
  std::vector<float> expected;
  for (int threads : {1, 2, 3}) {
    Context ctx = Create(64, 16, STATICLM_KV_F16, threads);
    ASSERT_EQ(staticlm_prefill(ctx.get(), prompt.data(), prompt.size()), STATICLM_OK);
    ASSERT_EQ(staticlm_decode(ctx.get(), 99), STATICLM_OK);
    auto logits = Logits(ctx.get());
    if (expected.empty()) {
      expected = logits;
    } else {
      EXPECT_EQ(logits, expected) << threads << " threads";
    }
  }
}

// Decode rows that attend many keys are computed in parts over their keys, one task each, and
// merged (backends/cpu/attention_split.h): 701 keys are three parts of each of the tiny model's
// two KV heads, in the static cache, with q8, with q4 and under a window of 400. Still not a bit
// may change with the thread count, and the deep sequence decoded in a batch beside a shallow one
// gets the bits it gets alone in a context of one sequence.
TEST_F(EngineTest, SplitDecodeAttentionKeepsEveryBitAcrossThreadsAndBatches) {
  const std::string path = staticlm::test::TempPath("engine_tiny_long.gguf");
  staticlm::test::TinyLlamaOptions options;
  options.weight_type = staticlm::DType::kQ4_1;
  options.embedding_type = staticlm::DType::kQ8_0;
  options.context_length = 1024;
  ASSERT_TRUE(staticlm::test::WriteTinyLlama(path.c_str(), options).ok());
  const std::vector<int32_t> deep = Prompt(700), shallow = Prompt(20);
  struct Mode {
    staticlm_kv_type kv;
    int32_t window;
  };
  for (Mode mode : {Mode{STATICLM_KV_F16, 0}, Mode{STATICLM_KV_Q8, 0}, Mode{STATICLM_KV_Q4, 0},
                    Mode{STATICLM_KV_F16, 400}}) {
    auto limits = [&](int threads, int batch) {
      staticlm_limits l;
      staticlm_limits_default(&l);
      l.threads = threads;
      l.max_batch = batch;
      l.max_context = 1024;
      l.prefill_chunk = 64;
      l.kv_type = mode.kv;
      l.window = mode.window;
      return l;
    };
    Context alone = staticlm::test::CreateContext(path.c_str(), limits(2, 1));
    ASSERT_NE(alone, nullptr);
    ASSERT_EQ(staticlm_prefill(alone.get(), deep.data(), deep.size()), STATICLM_OK);
    ASSERT_EQ(staticlm_decode(alone.get(), 99), STATICLM_OK);
    const std::vector<float> want = Logits(alone.get());
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE(std::to_string(threads) + " threads, kv " + std::to_string(mode.kv) +
                   ", window " + std::to_string(mode.window));
      Context single = staticlm::test::CreateContext(path.c_str(), limits(threads, 1));
      ASSERT_NE(single, nullptr);
      ASSERT_EQ(staticlm_prefill(single.get(), deep.data(), deep.size()), STATICLM_OK);
      ASSERT_EQ(staticlm_decode(single.get(), 99), STATICLM_OK);
      EXPECT_EQ(Logits(single.get()), want);

      Context batch = staticlm::test::CreateContext(path.c_str(), limits(threads, 2));
      ASSERT_NE(batch, nullptr);
      ASSERT_EQ(staticlm_seq_prefill(batch.get(), 0, shallow.data(), shallow.size()), STATICLM_OK);
      ASSERT_EQ(staticlm_seq_prefill(batch.get(), 1, deep.data(), deep.size()), STATICLM_OK);
      const int32_t sequences[2] = {0, 1}, tokens[2] = {99, 99};
      ASSERT_EQ(staticlm_decode_batch(batch.get(), sequences, tokens, 2), STATICLM_OK);
      const float* got = staticlm_seq_logits(batch.get(), 1);
      EXPECT_EQ(std::vector<float>(got, got + want.size()), want);
    }
  }
}

// Each ISA's kernels (--isa) against the reference kernels on a whole model: only summation
// order differs, so the logits agree to float rounding at every step of a greedy run (the
// kernels are checked one by one in fast_matmul_test). Both contexts are fed the reference's
// greedy tokens, and the ISA must pick the same token wherever the reference's top two are
// not within the tolerance. An ISA the CPU lacks is skipped (cpu_isa_test checks that the
// CPU's ISAs are offered).
class EngineIsaTest : public EngineTest, public ::testing::WithParamInterface<const char*> {};

int32_t Argmax(const std::vector<float>& logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

TEST_P(EngineIsaTest, KernelsAgreeWithReferenceKernels) {
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.isa = GetParam();
  char isa[128], error[256];
  if (staticlm_cpu_isa(&limits, isa, sizeof(isa), error, sizeof(error)) != STATICLM_OK) {
    GTEST_SKIP() << error;
  }
  std::printf("%s\n", isa);
  auto prompt = Prompt(29);
  Context fast = Create(64, 8, STATICLM_KV_F32, 2, false, GetParam());
  Context ref = Create(64, 8, STATICLM_KV_F32, 1, true);
  ASSERT_NE(fast, nullptr);
  ASSERT_NE(ref, nullptr);
  ASSERT_EQ(staticlm_prefill(fast.get(), prompt.data(), prompt.size()), STATICLM_OK);
  ASSERT_EQ(staticlm_prefill(ref.get(), prompt.data(), prompt.size()), STATICLM_OK);
  double worst = 0, largest = 0;
  for (int step = 0; step < 12; ++step) {
    auto a = Logits(fast.get()), b = Logits(ref.get());
    double step_largest = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      worst = std::max(worst, double(std::fabs(a[i] - b[i])));
      step_largest = std::max(step_largest, double(std::fabs(b[i])));
    }
    largest = std::max(largest, step_largest);
    const double tolerance = 1e-4 * std::max(1.0, step_largest);
    auto sorted = b;
    std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<float>());
    const int32_t token = Argmax(b);
    if (sorted[0] - sorted[1] > 2 * tolerance) {
      EXPECT_EQ(Argmax(a), token) << "step " << step;
    }
    ASSERT_EQ(staticlm_decode(fast.get(), token), STATICLM_OK);
    ASSERT_EQ(staticlm_decode(ref.get(), token), STATICLM_OK);
  }
  EXPECT_LT(worst, 1e-4 * std::max(1.0, largest)) << "largest logit " << largest;
  std::printf("largest difference from the reference kernels: %.3g (largest logit %.3g)\n", worst,
              largest);
}

INSTANTIATE_TEST_SUITE_P(Isas, EngineIsaTest,
                         ::testing::Values("auto", "avx512", "avx2", "neon", "scalar"),
                         [](const auto& info) { return std::string(info.param); });

// What the backend says it chose names the ISA asked for, and no kernel of a wider one: AVX2 on
// an AVX-512 machine must not keep AVX-512 attention or VNNI integer products.
TEST_F(EngineTest, BackendDescriptionNamesTheChosenIsa) {
  for (const char* isa : {"avx512", "avx2", "neon", "scalar"}) {
    staticlm_limits limits;
    staticlm_limits_default(&limits);
    limits.isa = isa;
    limits.activation_bits = 8;
    limits.max_context = 64;
    char choice[128], error[256];
    if (staticlm_cpu_isa(&limits, choice, sizeof(choice), error, sizeof(error)) != STATICLM_OK) {
      continue;
    }
    staticlm_context* ctx = nullptr;
    ASSERT_EQ(staticlm_create(path_->c_str(), &limits, &ctx, error, sizeof(error)), STATICLM_OK)
        << error;
    Context owned(ctx);
    const std::string description = staticlm_backend_description(ctx);
    EXPECT_EQ(description.rfind(std::string("cpu: isa ") + isa + " (cpu has ", 0), 0u)
        << description;
    if (std::string(isa) != "avx512") {
      EXPECT_EQ(description.find("avx512 matmul"), std::string::npos) << description;
      EXPECT_EQ(description.find("avx512 attention"), std::string::npos) << description;
      EXPECT_EQ(description.find("avx512vnni"), std::string::npos) << description;
    }
    if (std::string(isa) == "avx2") {
      EXPECT_NE(description.find("avx2 matmul, avx2 attention, avx2 element-wise"),
                std::string::npos)
          << description;
      EXPECT_NE(description.find("avx2 int8 activations"), std::string::npos) << description;
    }
    if (std::string(isa) == "scalar") {
      EXPECT_NE(description.find("reference matmul, reference attention"), std::string::npos)
          << description;
    }
  }
}

TEST_F(EngineTest, HistoryRecordsEveryTokenInTheCache) {
  Context ctx = Create(32, 4);
  auto prompt = Prompt(6);
  ASSERT_EQ(staticlm_prefill(ctx.get(), prompt.data(), 6), STATICLM_OK);
  ASSERT_EQ(staticlm_decode(ctx.get(), 77), STATICLM_OK);
  size_t n = 0;
  const int32_t* h = staticlm_history(ctx.get(), &n);
  ASSERT_EQ(n, 7u);
  EXPECT_EQ(std::vector<int32_t>(h, h + 6), prompt);
  EXPECT_EQ(h[6], 77);
}

TEST_F(EngineTest, F16CacheStaysCloseToF32) {
  auto prompt = Prompt(20);
  Context a = Create(32, 8, STATICLM_KV_F32), b = Create(32, 8, STATICLM_KV_F16);
  ASSERT_EQ(staticlm_prefill(a.get(), prompt.data(), 20), STATICLM_OK);
  ASSERT_EQ(staticlm_prefill(b.get(), prompt.data(), 20), STATICLM_OK);
  auto la = Logits(a.get()), lb = Logits(b.get());
  double worst = 0;
  for (size_t i = 0; i < la.size(); ++i) worst = std::max(worst, double(std::fabs(la[i] - lb[i])));
  EXPECT_LT(worst, 1e-2);
  EXPECT_GT(worst, 0.0) << "the f16 cache must actually round";
}

// Phi-3's head size, 96, is not a power of two: the q8 cache rotates its rows in Hadamard
// blocks of 64 and 32 (backends/cpu/hadamard.h). The transform is orthonormal, so only int8
// rounding separates the logits from the f32 cache's (0.021 on this model); a block scaled by
// a factor 10 % off scales its dot products and moved them by 0.41.
TEST_F(EngineTest, Q8CacheOfAHeadInHadamardBlocksStaysCloseToF32) {
  const std::string path = staticlm::test::TempPath("engine_tiny_head96.gguf");
  staticlm::test::TinyLlamaOptions options;
  options.embedding_length = 192;
  options.head_count = 2;
  options.head_count_kv = 1;
  ASSERT_TRUE(staticlm::test::WriteTinyLlama(path.c_str(), options).ok());
  auto create = [&](staticlm_kv_type kv) {
    staticlm_limits limits;
    staticlm_limits_default(&limits);
    limits.max_context = 64;
    limits.prefill_chunk = 8;
    limits.kv_type = kv;
    return staticlm::test::CreateContext(path.c_str(), limits);
  };
  Context f32 = create(STATICLM_KV_F32), q8 = create(STATICLM_KV_Q8);
  ASSERT_NE(f32, nullptr);
  ASSERT_NE(q8, nullptr);
  staticlm_model_info info;
  staticlm_get_model_info(q8.get(), &info);
  ASSERT_EQ(info.head_dim, 96);
  auto prompt = Prompt(30);
  ASSERT_EQ(staticlm_prefill(f32.get(), prompt.data(), prompt.size()), STATICLM_OK);
  ASSERT_EQ(staticlm_prefill(q8.get(), prompt.data(), prompt.size()), STATICLM_OK);
  double worst = 0, largest = 0;
  for (int step = 0; step < 8; ++step) {
    auto a = Logits(f32.get()), b = Logits(q8.get());
    for (size_t i = 0; i < a.size(); ++i) {
      worst = std::max(worst, double(std::fabs(a[i] - b[i])));
      largest = std::max(largest, double(std::fabs(a[i])));
    }
    ASSERT_EQ(staticlm_decode(f32.get(), 40 + step), STATICLM_OK);
    ASSERT_EQ(staticlm_decode(q8.get(), 40 + step), STATICLM_OK);
  }
  std::printf("head 96, q8 against f32: largest logit difference %.5f (logits up to %.3f)\n", worst,
              largest);
  EXPECT_LT(worst, 0.05);
  EXPECT_GT(worst, 0.0) << "the q8 cache must actually round";
}

TEST_F(EngineTest, BadLimitsAreRejectedAtCreate) {
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  staticlm_context* ctx = nullptr;
  char error[256];
  for (int field = 0; field < 5; ++field) {
    staticlm_limits l = limits;
    l.max_context = 64;
    (field == 0   ? l.max_context
     : field == 1 ? l.prefill_chunk
     : field == 2 ? l.max_batch
     : field == 3 ? l.max_prompt_bytes
                  : l.threads) = field % 2 ? 0 : -3;
    EXPECT_EQ(staticlm_create(path_->c_str(), &l, &ctx, error, sizeof(error)),
              STATICLM_INVALID_ARGUMENT)
        << field;
    EXPECT_EQ(ctx, nullptr);
    EXPECT_NE(std::string(error).find("positive"), std::string::npos) << error;
  }
}

TEST_F(EngineTest, PlannedMemoryMatchesTheContext) {
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.max_context = 128;
  limits.prefill_chunk = 16;
  staticlm_memory planned, held;
  char error[256];
  ASSERT_EQ(staticlm_plan_memory(path_->c_str(), &limits, &planned, error, sizeof(error)),
            STATICLM_OK)
      << error;
  staticlm_context* ctx = nullptr;
  ASSERT_EQ(staticlm_create(path_->c_str(), &limits, &ctx, error, sizeof(error)), STATICLM_OK);
  staticlm_get_memory(ctx, &held);
  staticlm_destroy(ctx);
  EXPECT_EQ(std::memcmp(&planned, &held, sizeof(planned)), 0);
  // 2 layers × K,V × 2 KV heads × 128 positions × 16 dims × 2 bytes.
  EXPECT_EQ(planned.kv_cache_bytes, 2u * 2 * 2 * 128 * 16 * 2);
  EXPECT_GE(planned.arena_bytes, planned.arena_lower_bound_bytes);
  EXPECT_LT(planned.arena_bytes, planned.arena_naive_bytes);
  EXPECT_EQ(planned.total_bytes, planned.weights_bytes + planned.kv_cache_bytes +
                                     planned.arena_bytes + planned.io_bytes + planned.host_bytes +
                                     planned.snapshot_bytes);
}

}  // namespace
