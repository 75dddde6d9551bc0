// A Hugging Face folder in the run phase makes no heap allocation or free and creates no thread:
// the sharded folder in place, and the F32 folder quantized at init to Q8_0 (the quantized
// weights and the shards' release are init's), prefilled and decoded through token ids on two
// threads. malloc, free, operator new/delete and pthread_create are interposed in this binary
// (platform/alloc_counter.cpp).
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "platform/alloc_counter.h"
#include "staticlm/staticlm.h"
#include "tests/support/context_helpers.h"

namespace {

namespace counter = staticlm::alloc_counter;
using staticlm::test::ContextPtr;

void RunWithoutHeap(const char* folder, const char* quantize) {
  if (!counter::Available()) {
    GTEST_SKIP() << "sanitizer build: ASan interposes malloc itself, so counting is disabled";
  }
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.max_context = 128;
  limits.prefill_chunk = 16;
  limits.threads = 2;
  limits.quantize = quantize;
  const std::string path = std::string(STATICLM_HF_MODELS_DIR) + "/" + folder;
  ContextPtr ctx = staticlm::test::CreateContext(path.c_str(), limits);
  ASSERT_NE(ctx, nullptr);
  std::vector<int32_t> prompt;
  for (int i = 0; i < 40; ++i) prompt.push_back(3 + (i * 37) % 380);
  staticlm_sampler sampler;
  staticlm_sampler_default(&sampler);

  counter::Start();
  staticlm_seed(ctx.get(), 5);
  ASSERT_EQ(staticlm_prefill(ctx.get(), prompt.data(), prompt.size()), STATICLM_OK);
  for (int i = 0; i < 60; ++i) {
    int32_t token = 0;
    ASSERT_EQ(staticlm_sample(ctx.get(), &sampler, &token), STATICLM_OK);
    ASSERT_EQ(staticlm_decode(ctx.get(), token), STATICLM_OK);
  }
  counter::Stop();
  char first[512];
  counter::DescribeFirstEvent(first, sizeof(first));
  EXPECT_EQ(counter::Events(), 0u) << first;
}

TEST(HfFolderNoHeap, ShardedFolderInPlace) {
  RunWithoutHeap("llama_sharded", nullptr);
}

TEST(HfFolderNoHeap, QuantizedAtInit) {
  RunWithoutHeap("llama_f32", "q8_0");
}

}  // namespace
