// Gemma 3 270M (models/gemma-3-270m-q4_k_m.gguf; skipped when absent) in the run phase makes no
// heap allocation or free and creates no thread — SentencePiece tokenization, chunked prefill,
// decoding well past the sliding layers' 512-token window (their rings wrap), sampling and
// detokenization — and its resident memory stays flat while the rings wrap. malloc, free,
// operator new/delete and pthread_create are interposed in this binary
// (platform/alloc_counter.cpp).
#include <cstdio>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "platform/alloc_counter.h"
#include "platform/process_stats.h"
#include "staticlm/staticlm.h"
#include "tests/support/context_helpers.h"

namespace {

namespace counter = staticlm::alloc_counter;
using staticlm::test::ContextPtr;

constexpr const char* kModel = STATICLM_GEMMA_MODEL;

bool HaveModel() {
  FILE* f = std::fopen(kModel, "rb");
  if (f != nullptr) std::fclose(f);
  return f != nullptr;
}

// Generates `tokens` tokens with the full sampler (top-k, top-p, min-p, temperature) and
// `activation_bits`, counting every heap event and thread from tokenization on; the resident
// size is read at token 600 (the rings are full by 575, the global layers' caches are written in
// place) and at the end, and may not grow in between.
void ExpectNoHeapAndFlatMemory(int32_t activation_bits, int32_t max_context, int tokens_to_generate,
                               int32_t sinks = 0, int32_t window = 0) {
  if (!counter::Available()) {
    GTEST_SKIP() << "sanitizer build: ASan interposes malloc itself, so counting is disabled";
  }
  if (!HaveModel()) GTEST_SKIP() << kModel << " is absent (scripts/fetch-model gemma3-270m)";
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.max_context = max_context;
  limits.prefill_chunk = 64;
  limits.activation_bits = activation_bits;
  limits.sinks = sinks;
  limits.window = window;
  staticlm_context* raw = nullptr;
  char error[256];
  ASSERT_EQ(staticlm_create(kModel, &limits, &raw, error, sizeof(error)), STATICLM_OK) << error;
  ContextPtr ctx(raw);
  std::printf("backend: %s\n", staticlm_backend_description(ctx.get()));
  std::vector<int32_t> tokens(size_t(limits.max_prompt_bytes));
  staticlm_sampler sampler;
  staticlm_sampler_default(&sampler);
  const char prompt[] = "Write a long story about a lighthouse keeper and a storm 🌊. Once upon";

  counter::Start();
  staticlm_seed(ctx.get(), 7);
  size_t n = 0;
  ASSERT_EQ(staticlm_tokenize(ctx.get(), prompt, std::strlen(prompt), 0, tokens.data(),
                              tokens.size(), &n),
            STATICLM_OK);
  ASSERT_EQ(staticlm_prefill(ctx.get(), tokens.data(), n), STATICLM_OK);
  uint64_t rss_after_window = 0, rss_end = 0;
  char piece[256];
  for (int i = 0; i < tokens_to_generate; ++i) {
    int32_t token = 0;
    ASSERT_EQ(staticlm_sample(ctx.get(), &sampler, &token), STATICLM_OK);
    size_t bytes = 0;
    ASSERT_EQ(staticlm_token_to_text(ctx.get(), token, piece, sizeof(piece), &bytes), STATICLM_OK);
    ASSERT_EQ(staticlm_decode(ctx.get(), token), STATICLM_OK) << staticlm_last_error(ctx.get());
    // Reading RSS opens no file and allocates nothing (it is counted too).
    if (i == 600) rss_after_window = staticlm::CurrentRssBytes();
  }
  rss_end = staticlm::CurrentRssBytes();
  staticlm_flush_text(ctx.get(), piece, sizeof(piece));
  counter::Stop();

  char where[4096];
  counter::DescribeFirstEvent(where, sizeof(where));
  EXPECT_EQ(counter::Allocations(), 0u) << where;
  EXPECT_EQ(counter::Frees(), 0u) << where;
  EXPECT_EQ(counter::ThreadsCreated(), 0u) << where;
  const double grown_mib =
      (static_cast<double>(rss_end) - static_cast<double>(rss_after_window)) / 1048576.0;
  std::printf("RSS at token 600: %.1f MiB, at token %d: %.1f MiB (%+.2f MiB)\n",
              rss_after_window / 1048576.0, tokens_to_generate, rss_end / 1048576.0, grown_mib);
  EXPECT_LT(grown_mib, 1.0);
}

// 1,950 tokens: the 575-slot rings wrap three times while the global layers' caches fill to
// position ~1,970 of their 2,048. With int8 activations (the packed Q8_0/Q5_0 kernels where the
// CPU has AVX2 or AVX-512 VNNI, else f32 as below): the same run-phase code plus the
// activation quantizer. (It ran 4,000 tokens in a 4,096 context, the suite's longest test at
// 104 s; nothing in the run phase depends on the context's size, so half the run checks the
// same code: issue 19.)
TEST(Gemma3NoHeapTest, LongGenerationMakesNoHeapEventsAndKeepsMemoryFlat) {
  ExpectNoHeapAndFlatMemory(/*activation_bits=*/8, /*max_context=*/2048,
                            /*tokens_to_generate=*/1950);
}

// f32 activations (the default): past the window, so the rings wrap, and 200 tokens on.
TEST(Gemma3NoHeapTest, F32ActivationsMakeNoHeapEventsPastTheWindow) {
  ExpectNoHeapAndFlatMemory(/*activation_bits=*/0, /*max_context=*/1024,
                            /*tokens_to_generate=*/800);
}

// Sinks on the global layers (--sinks 4 --window 512): every layer a ring of 575 slots, so the
// 800 tokens run past the context of 600, which the hybrid cache alone would refuse.
TEST(Gemma3NoHeapTest, SinksOnTheGlobalLayersRunPastTheContext) {
  ExpectNoHeapAndFlatMemory(/*activation_bits=*/8, /*max_context=*/600,
                            /*tokens_to_generate=*/800, /*sinks=*/4, /*window=*/512);
}

}  // namespace
