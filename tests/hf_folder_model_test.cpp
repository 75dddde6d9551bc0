// Hugging Face folders (runtime/hf/hf_folder.h) against two independent oracles, on the tiny
// random-weight Llama-family folders of tests/models/hf/ (made by
// tests/reference/make_hf_folder_models.py):
//  - llama.cpp's converter: the F16 folder and its F16 GGUF conversion hold the same values
//    (the GGUF's q and k rows permuted for adjacent-pair RoPE, the folder's not), so their
//    logits may differ only by summation order; the F32 folder quantized at init to Q8_0 and the
//    converter's Q8_0 file give the same greedy ids (near-tie rule).
//  - transformers: greedy continuations of each folder (F32, F16, BF16, and the F32 weights in
//    two shards) with f32 arithmetic on the stored values.
// Everything runs through token ids: the folder's tokenizer.json is another change's, and until
// it is read text calls fail with a message naming the folder (tested here too).
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/staticlm.h"
#include "tests/support/context_helpers.h"
#include "tests/support/golden_files.h"
#include "tests/support/greedy_check.h"
#include "tests/support/temp_path.h"

namespace {

using staticlm::test::ContextPtr;
using staticlm::test::CreateContext;
using staticlm::test::Logits;

const std::string kDir = STATICLM_HF_MODELS_DIR;
// Near ties: the tiny model's logits are a few units, and f32 summation order moves them by
// about 1e-5; a real mistake (RoPE style, a norm, a shard) moves them by tenths.
constexpr float kNearTie = 0.002f;

staticlm_limits Limits(const char* quantize = nullptr) {
  staticlm_limits l;
  staticlm_limits_default(&l);
  l.max_context = 128;
  l.prefill_chunk = 16;
  l.kv_type = STATICLM_KV_F32;
  l.quantize = quantize;
  return l;
}

std::vector<staticlm::test::GreedyCase> ReadCases(const std::string& variant) {
  std::vector<staticlm::test::GreedyCase> cases;
  std::string error;
  EXPECT_TRUE(
      staticlm::test::ReadGreedyGolden(kDir + "/greedy_" + variant + ".txt", &cases, &error))
      << error;
  return cases;
}

void CheckGreedy(const std::string& folder, const std::string& variant) {
  ContextPtr ctx = CreateContext((kDir + "/" + folder).c_str(), Limits());
  ASSERT_NE(ctx, nullptr);
  auto cases = ReadCases(variant);
  ASSERT_EQ(cases.size(), 3u);
  staticlm::test::CheckGreedyCases(ctx.get(), cases, kNearTie);
}

TEST(HfFolderModel, F32FolderGivesTransformersGreedyIds) {
  CheckGreedy("llama_f32", "f32");
}

TEST(HfFolderModel, F16FolderGivesTransformersGreedyIds) {
  CheckGreedy("llama_f16", "f16");
}

TEST(HfFolderModel, Bf16FolderGivesTransformersGreedyIds) {
  CheckGreedy("llama_bf16", "bf16");
}

TEST(HfFolderModel, ShardedFolderGivesTransformersGreedyIds) {
  CheckGreedy("llama_sharded", "f32");
}

// Gemma 3: norms stored minus one, scaled embeddings, GELU, an 8-token window on five of
// every six layers (the prompts run past it), two RoPE bases from rope_parameters.
TEST(HfFolderModel, Gemma3FolderGivesTransformersGreedyIds) {
  CheckGreedy("gemma3_bf16", "gemma3");
}

// Gemma 3's query_pre_attn_scalar where it is not head_dim (24 against 16; Gemma 3 27B's is
// width / heads): the greedy ids and each step's top logit are transformers'. The ids alone
// would pass without it; the top logits move by 0.1 to 0.17.
TEST(HfFolderModel, Gemma3QueryScalarScalesTheScores) {
  ContextPtr ctx = CreateContext((kDir + "/gemma3_query_scalar").c_str(), Limits());
  ASSERT_NE(ctx, nullptr);
  const auto cases = ReadCases("gemma3_query_scalar");
  ASSERT_EQ(cases.size(), 3u);
  staticlm::test::CheckGreedyCases(ctx.get(), cases, kNearTie);
  staticlm::test::CheckTopLogits(ctx.get(), cases, 1e-3f);
}

// A cache other than the static one, and how many greedy steps to compare.
struct CacheShape {
  int32_t window = 0, sinks = 0;
  int steps = 24;
};

// Partial RoPE (Phi-4-mini's partial_rotary_factor, here 0.75 in rope_parameters as transformers
// 5 writes it): the small Phi-3 folder with RoPE on 24 of each head's 32 elements and 12
// longrope factors gives transformers' greedy ids and top logits. Turning all 32 (the family
// folder's config) moves transformers' logits by units after the first token.
TEST(HfFolderModel, PartialRopeFolderGivesTransformersGreedyIds) {
  ContextPtr ctx = CreateContext((kDir + "/phi3_partial").c_str(), Limits());
  ASSERT_NE(ctx, nullptr);
  const auto cases = ReadCases("phi3_partial");
  ASSERT_EQ(cases.size(), 3u);
  staticlm::test::CheckGreedyCases(ctx.get(), cases, kNearTie);
  staticlm::test::CheckTopLogits(ctx.get(), cases, 1e-3f);
}

// Logits of `folder` and `gguf` after the same ids, at every step of a greedy run of the GGUF:
// equal up to summation order (`tolerance`), so the greedy ids are equal too.
void CheckSameLogits(const std::string& folder_name, const char* quantize,
                     const std::string& gguf_name, float tolerance, CacheShape shape = {}) {
  staticlm_limits folder_limits = Limits(quantize), gguf_limits = Limits();
  for (staticlm_limits* l : {&folder_limits, &gguf_limits}) {
    l->window = shape.window;
    l->sinks = shape.sinks;
  }
  ContextPtr folder = CreateContext((kDir + "/" + folder_name).c_str(), folder_limits);
  ContextPtr gguf = CreateContext((kDir + "/" + gguf_name).c_str(), gguf_limits);
  ASSERT_NE(folder, nullptr);
  ASSERT_NE(gguf, nullptr);
  for (const auto& c : ReadCases("f32")) {
    staticlm_reset(folder.get());
    staticlm_reset(gguf.get());
    ASSERT_EQ(staticlm_prefill(folder.get(), c.prompt_ids.data(), c.prompt_ids.size()),
              STATICLM_OK);
    ASSERT_EQ(staticlm_prefill(gguf.get(), c.prompt_ids.data(), c.prompt_ids.size()), STATICLM_OK);
    for (int step = 0; step < shape.steps; ++step) {
      std::vector<float> a = Logits(folder.get()), b = Logits(gguf.get());
      ASSERT_FALSE(a.empty());
      ASSERT_EQ(a.size(), b.size());
      float worst = 0.0f;
      size_t best = 0;
      for (size_t i = 0; i < a.size(); ++i) {
        worst = std::fmax(worst, std::fabs(a[i] - b[i]));
        if (b[i] > b[best]) best = i;
      }
      ASSERT_LT(worst, tolerance) << c.name << " step " << step;
      const int32_t next = static_cast<int32_t>(best);
      ASSERT_EQ(staticlm_decode(folder.get(), next), STATICLM_OK);
      ASSERT_EQ(staticlm_decode(gguf.get(), next), STATICLM_OK);
    }
  }
}

// The same F16 values; the GGUF's q and k rows permuted for adjacent-pair RoPE.
TEST(HfFolderModel, F16FolderMatchesItsGgufConversion) {
  CheckSameLogits("llama_f16", nullptr, "llama_f16.gguf", 1e-4f);
}

// The same with four sinks and a window of 24 over 200 steps (past the context of 128): the
// folder's attention turns its queries for the sinks by halves, the GGUF's by adjacent pairs
// (ref::RotateQuery), and the two are the same model. A wrong pairing moves logits by tenths.
TEST(HfFolderModel, SinksOnTheFolderMatchItsGgufConversion) {
  CacheShape sinks;
  sinks.window = 24;
  sinks.sinks = 4;
  sinks.steps = 200;
  CheckSameLogits("llama_f16", nullptr, "llama_f16.gguf", 1e-4f, sinks);
}

// llama.cpp's converter writes the partial width as phi3.rope.dimension_count (24) and the 12
// factors as tensors.
TEST(HfFolderModel, PartialRopeFolderMatchesItsGgufConversion) {
  CheckSameLogits("phi3_partial", nullptr, "phi3_partial_f16.gguf", 1e-4f);
}

// The converter's F16 of the BF16 values (exact at these magnitudes), norms plus one in F32.
TEST(HfFolderModel, Gemma3FolderMatchesItsGgufConversion) {
  CheckSameLogits("gemma3_bf16", nullptr, "gemma3_f16.gguf", 1e-4f);
}

// Quantized at init to the same blocks the converter (Q8_0) and gguf-py (Q4_0) write.
TEST(HfFolderModel, Q8_0AtInitMatchesTheConvertersQ8_0) {
  CheckSameLogits("llama_f32", "q8_0", "llama_q8_0.gguf", 1e-4f);
}

TEST(HfFolderModel, Q4_0AtInitMatchesGgufPysQ4_0) {
  CheckSameLogits("llama_sharded", "q4_0", "llama_q4_0.gguf", 1e-4f);
}

// q4_k on rows that are not whole 256-value blocks (all of this model's) falls back to Q4_0.
TEST(HfFolderModel, Q4_KFallsBackToQ4_0OnShortRows) {
  CheckSameLogits("llama_f32", "q4_k", "llama_q4_0.gguf", 1e-4f);
}

// Quantizing takes the weights out of the mapped files into the smaller buffer.
TEST(HfFolderModel, QuantizedWeightsAreTheWeightsBuffer) {
  ContextPtr q8 = CreateContext((kDir + "/llama_f32").c_str(), Limits("q8_0"));
  ContextPtr f32 = CreateContext((kDir + "/llama_f32").c_str(), Limits());
  ASSERT_NE(q8, nullptr);
  ASSERT_NE(f32, nullptr);
  staticlm_memory m8, m32;
  staticlm_get_memory(q8.get(), &m8);
  staticlm_get_memory(f32.get(), &m32);
  // Q8_0 matrices (34 bytes per 32 values) and F32 norms; the F32 folder's 492,800 bytes of
  // tensors in place.
  EXPECT_LT(m8.weights_bytes, 140000u);
  EXPECT_GT(m32.weights_bytes, 492800u);
}

TEST(HfFolderModel, TextCallsFailClearlyWhileIdsRun) {
  // The folder's config and weights without its tokenizer.json.
  const std::string dir = staticlm::test::TempPath("hf_ids_only");
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  for (const char* name : {"config.json", "model.safetensors"}) {
    ASSERT_EQ(symlink((kDir + "/llama_f32/" + name).c_str(), (dir + "/" + name).c_str()), 0);
  }
  {
    ContextPtr ctx = CreateContext(dir.c_str(), Limits());
    ASSERT_NE(ctx, nullptr);
    int32_t ids[8];
    size_t n = 0;
    EXPECT_NE(staticlm_tokenize(ctx.get(), "hi", 2, 1, ids, 8, &n), STATICLM_OK);
    EXPECT_NE(std::strstr(staticlm_last_error(ctx.get()), "tokenizer.json"), nullptr)
        << staticlm_last_error(ctx.get());
    const int32_t prompt[] = {1, 2, 3};
    EXPECT_EQ(staticlm_prefill(ctx.get(), prompt, 3), STATICLM_OK);
  }
  for (const char* name : {"config.json", "model.safetensors"}) {
    std::remove((dir + "/" + name).c_str());
  }
  rmdir(dir.c_str());
}

TEST(HfFolderModel, TextCallsUseTheFoldersTokenizer) {
  ContextPtr ctx = CreateContext((kDir + "/llama_f32").c_str(), Limits());
  ASSERT_NE(ctx, nullptr);
  int32_t ids[16];
  size_t n = 0;
  ASSERT_EQ(staticlm_tokenize(ctx.get(), "hello", 5, 1, ids, 16, &n), STATICLM_OK)
      << staticlm_last_error(ctx.get());
  EXPECT_GT(n, 0u);
  EXPECT_EQ(staticlm_prefill(ctx.get(), ids, n), STATICLM_OK) << staticlm_last_error(ctx.get());
}

TEST(HfFolderModel, QuantizeIsRefusedForAGgufFile) {
  staticlm_limits l = Limits("q8_0");
  staticlm_context* ctx = nullptr;
  char error[256] = {0};
  EXPECT_EQ(staticlm_create((kDir + "/llama_f16.gguf").c_str(), &l, &ctx, error, sizeof(error)),
            STATICLM_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(error, "--quantize"), nullptr) << error;
  l = Limits("q3_x");
  EXPECT_EQ(staticlm_create((kDir + "/llama_f32").c_str(), &l, &ctx, error, sizeof(error)),
            STATICLM_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(error, "q3_x"), nullptr) << error;
}

// Greedy runs of `a` and `b` side by side: the same ids, except that a divergence where `b`'s
// top-2 gap is below kNearTie ends the case.
void CheckSameGreedyIds(staticlm_context* a, staticlm_context* b,
                        const std::vector<int32_t>& prompt) {
  staticlm_reset(a);
  staticlm_reset(b);
  ASSERT_EQ(staticlm_prefill(a, prompt.data(), prompt.size()), STATICLM_OK);
  ASSERT_EQ(staticlm_prefill(b, prompt.data(), prompt.size()), STATICLM_OK);
  for (int step = 0; step < 24; ++step) {
    std::vector<float> la = Logits(a), lb = Logits(b);
    ASSERT_EQ(la.size(), lb.size());
    size_t ia = 0, ib = 0;
    for (size_t i = 0; i < la.size(); ++i) {
      if (la[i] > la[ia]) ia = i;
      if (lb[i] > lb[ib]) ib = i;
    }
    float second = -1e30f;
    for (size_t i = 0; i < lb.size(); ++i) {
      if (i != ib && lb[i] > second) second = lb[i];
    }
    if (ia != ib) {
      ASSERT_LT(lb[ib] - second, kNearTie) << "step " << step << ": " << ia << " vs " << ib;
      return;
    }
    ASSERT_EQ(staticlm_decode(a, static_cast<int32_t>(ia)), STATICLM_OK);
    ASSERT_EQ(staticlm_decode(b, static_cast<int32_t>(ib)), STATICLM_OK);
  }
}

// The Vulkan backend binds a folder's stitched mapping as it binds a GGUF's data section (and
// uploads the quantized tail); it gives transformers' greedy ids too. Skips without a device.
TEST(HfFolderModel, VulkanGivesTransformersGreedyIds) {
  for (const char* quantize : {static_cast<const char*>(nullptr), "q8_0"}) {
    staticlm_limits l = Limits(quantize);
    l.backend = "vulkan";
    std::string error;
    ContextPtr ctx = staticlm::test::TryCreateContext((kDir + "/llama_sharded").c_str(), l, &error);
    if (ctx == nullptr) GTEST_SKIP() << "no Vulkan device: " << error;
    if (quantize == nullptr) {
      staticlm::test::CheckGreedyCases(ctx.get(), ReadCases("f32"), kNearTie);
    } else {
      ContextPtr gguf = CreateContext((kDir + "/llama_q8_0.gguf").c_str(), Limits());
      for (const auto& c : ReadCases("f32"))
        CheckSameGreedyIds(ctx.get(), gguf.get(), c.prompt_ids);
    }
  }
}

// Partial RoPE on Vulkan: transformers' greedy ids, with the static cache and with sinks (the
// sinks' query turn leaves the unturned elements; ids past the window are not transformers',
// so there the CPU's are the reference).
TEST(HfFolderModel, VulkanRunsPartialRope) {
  staticlm_limits l = Limits();
  l.backend = "vulkan";
  std::string error;
  ContextPtr ctx = staticlm::test::TryCreateContext((kDir + "/phi3_partial").c_str(), l, &error);
  if (ctx == nullptr) GTEST_SKIP() << "no Vulkan device: " << error;
  staticlm::test::CheckGreedyCases(ctx.get(), ReadCases("phi3_partial"), kNearTie);
  l.window = 16;
  l.sinks = 4;
  ContextPtr gpu_sinks = CreateContext((kDir + "/phi3_partial").c_str(), l);
  l.backend = "cpu";
  ContextPtr cpu_sinks = CreateContext((kDir + "/phi3_partial").c_str(), l);
  ASSERT_NE(gpu_sinks, nullptr);
  ASSERT_NE(cpu_sinks, nullptr);
  for (const auto& c : ReadCases("phi3_partial"))
    CheckSameGreedyIds(gpu_sinks.get(), cpu_sinks.get(), c.prompt_ids);
}

// The inspect text of a folder names the converter's metadata and the GGUF tensor names.
TEST(HfFolderModel, InspectDescribesAFolder) {
  char out[8192], error[256];
  ASSERT_EQ(staticlm_describe_model((kDir + "/llama_sharded").c_str(), out, sizeof(out), error,
                                    sizeof(error)),
            STATICLM_OK)
      << error;
  EXPECT_NE(std::strstr(out, "Hugging Face folder, 2 safetensors files"), nullptr) << out;
  EXPECT_NE(std::strstr(out, "llama.block_count"), nullptr) << out;
  EXPECT_NE(std::strstr(out, "tied"), nullptr) << out;
}

}  // namespace
