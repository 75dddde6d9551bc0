// Fusion passes: each one shrinks the op list, and every combination gives the same logits as
// the unfused plan — bitwise on the CPU, where a fused op performs the same float operations.
// (golden_test also checks a fully unfused plan against transformers.)
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/staticlm.h"
#include "tests/support/gguf_writer.h"
#include "tests/support/temp_path.h"

namespace {

class FusionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = new std::string(staticlm::test::TempPath("fusion_tiny.gguf"));
    staticlm::test::TinyLlamaOptions options;
    options.weight_type = staticlm::DType::kQ4_1;
    options.embedding_type = staticlm::DType::kQ8_0;
    options.block_count = 3;
    ASSERT_TRUE(staticlm::test::WriteTinyLlama(path_->c_str(), options).ok());
  }
  static void TearDownTestSuite() { delete path_; }

  static staticlm_limits Limits(uint32_t disabled) {
    staticlm_limits l;
    staticlm_limits_default(&l);
    l.max_context = 64;
    l.prefill_chunk = 8;
    l.threads = 2;
    l.disabled_fusions = disabled;
    return l;
  }

  // Logits after a chunked prefill and two decode steps.
  static std::vector<float> Logits(uint32_t disabled) {
    staticlm_limits l = Limits(disabled);
    staticlm_context* ctx = nullptr;
    char error[256];
    EXPECT_EQ(staticlm_create(path_->c_str(), &l, &ctx, error, sizeof(error)), STATICLM_OK)
        << error;
    std::vector<int32_t> prompt;
    for (int i = 0; i < 19; ++i) prompt.push_back(30 + i * 11);
    EXPECT_EQ(staticlm_prefill(ctx, prompt.data(), prompt.size()), STATICLM_OK);
    EXPECT_EQ(staticlm_decode(ctx, 40), STATICLM_OK);
    EXPECT_EQ(staticlm_decode(ctx, 41), STATICLM_OK);
    staticlm_model_info info;
    staticlm_get_model_info(ctx, &info);
    std::vector<float> out(staticlm_logits(ctx), staticlm_logits(ctx) + info.vocab_size);
    staticlm_destroy(ctx);
    return out;
  }

  static int OpCount(uint32_t disabled) {
    staticlm_limits l = Limits(disabled);
    std::vector<char> json(1 << 14);
    size_t needed = 0;
    char error[256];
    EXPECT_EQ(staticlm_plan_report(path_->c_str(), &l, 1, json.data(), json.size(), &needed, error,
                                   sizeof(error)),
              STATICLM_OK);
    std::string s(json.data());
    size_t at = s.find("\"ops\": ");
    return at == std::string::npos ? -1 : std::atoi(s.c_str() + at + 7);
  }

  static std::string* path_;
};
std::string* FusionTest::path_ = nullptr;

TEST_F(FusionTest, EveryCombinationOfPassesGivesTheUnfusedLogits) {
  const uint32_t all = staticlm_fusion_pass("all");
  std::vector<float> unfused = Logits(all);
  for (uint32_t disabled = 0; disabled <= all; ++disabled) {
    EXPECT_EQ(Logits(disabled), unfused) << "disabled mask " << disabled;
  }
}

TEST_F(FusionTest, EachPassRemovesOps) {
  const uint32_t all = staticlm_fusion_pass("all");
  int unfused = OpCount(all);
  // Per layer: qkv removes 2 matmuls, gate_up 1 matmul and the silu op, residual the 2 adds.
  // A norm folds only into a matmul that is the sole reader of its output: alone that is just
  // the final norm (each layer's norms feed several projections until qkv and gate_up merged
  // them), after them the 2 norms of every layer too.
  const int layers = 3;
  struct {
    const char* pass;
    int removed;
  } expected[] = {
      {"qkv", 2 * layers}, {"gate_up", 2 * layers}, {"residual", 2 * layers}, {"norm", 1}};
  for (const auto& e : expected) {
    EXPECT_EQ(OpCount(all & ~staticlm_fusion_pass(e.pass)), unfused - e.removed) << e.pass;
  }
  uint32_t merged_only = all & ~(staticlm_fusion_pass("qkv") | staticlm_fusion_pass("gate_up"));
  uint32_t merged_and_norm = merged_only & ~staticlm_fusion_pass("norm");
  EXPECT_EQ(OpCount(merged_and_norm), OpCount(merged_only) - (2 * layers + 1));
  EXPECT_EQ(OpCount(0), unfused - (8 * layers + 1));
  EXPECT_EQ(staticlm_fusion_pass("nonsense"), 0u);
}

}  // namespace
