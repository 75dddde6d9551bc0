// Linear and YaRN RoPE scaling (runtime/model/rope_scaling.h) against transformers, the oracle
// (goldens from tests/reference/make_config_variants.py):
//  - the frequency divisors against transformers' inverse frequencies for Gemma 3 4B's linear
//    scaling and several YaRN configurations (Qwen2.5's, other betas, mscale);
//  - the tiny Hugging Face folders of tests/models/hf/ with scaling switched on in config.json
//    (linear; YaRN with default and explicit parameters, with mscale; Gemma 3 with linear
//    scaling on its global layers only): greedy ids and each step's top logit equal to
//    transformers' (the top logit moves by tenths when the scaling is missing or applied to the
//    sliding layers too, while the ids of so small a model may not change);
//  - GGUF files with the keys llama.cpp's converter writes for those configs: logits equal to
//    the folder's, so the factors added after a GGUF's bytes (GgufFile::AddComputedTensor) are
//    the folder's.
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/gguf/gguf_file.h"
#include "runtime/model/rope_scaling.h"
#include "staticlm/staticlm.h"
#include "tests/support/context_helpers.h"
#include "tests/support/golden_files.h"
#include "tests/support/greedy_check.h"

namespace staticlm {
namespace {

using test::ContextPtr;
using test::CreateContext;
using test::Logits;

const std::string kDir = STATICLM_HF_MODELS_DIR;
constexpr float kNearTie = 0.002f;  // as hf_folder_model_test: f32 summation order moves ~1e-5

struct FactorCase {
  std::string name;
  RopeScaling scaling;
  float theta = 0.0f;
  int head_dim = 0;
  double attention_factor = 0.0;
  bool has_mscale = false;
  std::vector<double> inv_freq;
};

std::vector<FactorCase> ReadFactorCases() {
  std::ifstream in(std::string(STATICLM_GOLDEN_DIR) + "/rope_scaling_factors.txt");
  EXPECT_TRUE(in.good()) << "tests/golden/rope_scaling_factors.txt";
  std::vector<FactorCase> cases;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    std::string tag;
    s >> tag;
    if (tag == "case") {
      cases.emplace_back();
      s >> cases.back().name;
    } else if (cases.empty() || tag.empty() || tag[0] == '#') {
      continue;
    } else if (tag == "config") {
      cases.back().has_mscale = line.find("mscale") != std::string::npos;
    } else if (tag == "params") {
      FactorCase& c = cases.back();
      std::string type;
      s >> type >> c.scaling.factor >> c.theta >> c.head_dim >> c.scaling.original_context >>
          c.scaling.beta_fast >> c.scaling.beta_slow;
      c.scaling.kind = type == "linear" ? RopeScalingKind::kLinear : RopeScalingKind::kYarn;
    } else if (tag == "attention_factor") {
      s >> cases.back().attention_factor;
    } else if (tag == "inv_freq") {
      for (double v; s >> v;) cases.back().inv_freq.push_back(v);
    }
  }
  return cases;
}

TEST(RopeScalingTest, FactorsGiveTransformersInverseFrequencies) {
  const std::vector<FactorCase> cases = ReadFactorCases();
  ASSERT_EQ(cases.size(), 5u);
  for (const FactorCase& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_EQ(c.inv_freq.size(), static_cast<size_t>(c.head_dim / 2));
    const std::vector<float> factors = RopeScalingFactors(c.scaling, c.theta, c.head_dim);
    ASSERT_EQ(factors.size(), c.inv_freq.size());
    for (size_t i = 0; i < factors.size(); ++i) {
      // The kernels' frequency: base^(−2i/d) divided by the factor. transformers computes in
      // float32, so agreement is to float rounding (a few units in the last place).
      const double freq = std::pow(double(c.theta), -2.0 * double(i) / c.head_dim) / factors[i];
      EXPECT_NEAR(freq / c.inv_freq[i], 1.0, 2e-6) << "pair " << i;
    }
    // mscale's ratio is read from a folder's config (tested below through rope_yarn_mscale).
    if (!c.has_mscale) {
      const bool yarn = c.scaling.kind == RopeScalingKind::kYarn;
      const double magnitude = yarn ? YarnMagnitude(c.scaling.factor) : 1.0;
      EXPECT_NEAR(magnitude, c.attention_factor, 1e-6);
    }
  }
}

// Every frequency of a linear scaling is divided by the factor; YaRN keeps the fastest pairs
// and divides the slowest: the ramp's ends, independent of the golden file.
TEST(RopeScalingTest, LinearDividesAllAndYarnKeepsTheFastestPairs) {
  RopeScaling linear;
  linear.kind = RopeScalingKind::kLinear;
  linear.factor = 8.0f;
  for (float f : RopeScalingFactors(linear, 1e6f, 256)) EXPECT_EQ(f, 8.0f);
  RopeScaling yarn;
  yarn.kind = RopeScalingKind::kYarn;
  yarn.factor = 4.0f;
  yarn.original_context = 32768;
  const std::vector<float> f = RopeScalingFactors(yarn, 1e6f, 128);
  EXPECT_EQ(f.front(), 1.0f);
  EXPECT_FLOAT_EQ(f.back(), 4.0f);
  for (size_t i = 1; i < f.size(); ++i) EXPECT_GE(f[i], f[i - 1]);
}

staticlm_limits Limits() {
  staticlm_limits l;
  staticlm_limits_default(&l);
  l.max_context = 128;
  l.prefill_chunk = 16;
  l.kv_type = STATICLM_KV_F32;
  return l;
}

void CheckFolder(const std::string& folder, const std::string& variant) {
  SCOPED_TRACE(folder);
  ContextPtr ctx = CreateContext((kDir + "/" + folder).c_str(), Limits());
  ASSERT_NE(ctx, nullptr);
  const std::string golden = kDir + "/greedy_" + variant + ".txt";
  std::vector<test::GreedyCase> cases;
  std::string error;
  ASSERT_TRUE(test::ReadGreedyGolden(golden, &cases, &error)) << error;
  ASSERT_EQ(cases.size(), 3u);
  test::CheckGreedyCases(ctx.get(), cases, kNearTie);
  test::CheckTopLogits(ctx.get(), cases, 1e-3f);
}

TEST(RopeScalingTest, LinearFolderGivesTransformersLogits) {
  CheckFolder("rope_linear", "linear");
}

TEST(RopeScalingTest, YarnFolderGivesTransformersLogits) {
  CheckFolder("rope_yarn", "yarn");
}

TEST(RopeScalingTest, YarnWithBetasAndAttentionFactorGivesTransformersLogits) {
  CheckFolder("rope_yarn_params", "yarn_params");
}

TEST(RopeScalingTest, YarnWithMscaleGivesTransformersLogits) {
  CheckFolder("rope_yarn_mscale", "yarn_mscale");
}

// Gemma 3 4B-27B: linear scaling on the global layers; the sliding layers' rotary embedding
// (its own base) is not scaled.
TEST(RopeScalingTest, Gemma3LinearScalesOnlyTheGlobalLayers) {
  CheckFolder("rope_gemma3_linear", "gemma3_linear");
}

// A GGUF with the scaling keys (no factor tensor) and the folder with the same values: the
// same logits at every step, up to summation order.
void CheckGgufAgainstFolder(const std::string& gguf, const std::string& folder) {
  SCOPED_TRACE(gguf);
  ContextPtr a = CreateContext((kDir + "/" + folder).c_str(), Limits());
  ContextPtr b = CreateContext((kDir + "/" + gguf).c_str(), Limits());
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  const std::vector<int32_t> prompt = {1, 14, 31, 48, 65, 82, 99, 116, 133, 150, 167, 184, 201};
  ASSERT_EQ(staticlm_prefill(a.get(), prompt.data(), prompt.size()), STATICLM_OK);
  ASSERT_EQ(staticlm_prefill(b.get(), prompt.data(), prompt.size()), STATICLM_OK);
  for (int step = 0; step < 48; ++step) {
    const std::vector<float> x = Logits(a.get()), y = Logits(b.get());
    ASSERT_EQ(x.size(), y.size());
    size_t best = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_NEAR(x[i], y[i], 1e-4) << "step " << step << " id " << i;
      if (y[i] > y[best]) best = i;
    }
    ASSERT_EQ(staticlm_decode(a.get(), static_cast<int32_t>(best)), STATICLM_OK);
    ASSERT_EQ(staticlm_decode(b.get(), static_cast<int32_t>(best)), STATICLM_OK);
  }
}

TEST(RopeScalingTest, LinearGgufMatchesTheFolder) {
  CheckGgufAgainstFolder("llama_f16_linear.gguf", "rope_linear");
}

TEST(RopeScalingTest, YarnGgufMatchesTheFolder) {
  CheckGgufAgainstFolder("llama_f16_yarn.gguf", "rope_yarn");
}

TEST(RopeScalingTest, Gemma3LinearGgufMatchesTheFolder) {
  CheckGgufAgainstFolder("gemma3_f16_linear.gguf", "rope_gemma3_linear");
}

// The Vulkan backend binds the computed factors with the weights (one span, the file's mapping
// and the page after it) and gives transformers' greedy ids. Skips without a device.
TEST(RopeScalingTest, VulkanRunsTheComputedFactors) {
  for (auto [gguf, variant] : {std::pair{"llama_f16_yarn.gguf", "yarn"},
                               std::pair{"gemma3_f16_linear.gguf", "gemma3_linear"}}) {
    SCOPED_TRACE(gguf);
    staticlm_limits l = Limits();
    l.backend = "vulkan";
    std::string error;
    ContextPtr ctx = test::TryCreateContext((kDir + "/" + gguf).c_str(), l, &error);
    if (ctx == nullptr) GTEST_SKIP() << "no Vulkan device: " << error;
    std::vector<test::GreedyCase> cases;
    ASSERT_TRUE(test::ReadGreedyGolden(kDir + "/greedy_" + variant + ".txt", &cases, &error))
        << error;
    test::CheckGreedyCases(ctx.get(), cases, kNearTie);
  }
}

// inspect says which scaling a model has, for a file and a folder.
TEST(RopeScalingTest, InspectNamesTheScaling) {
  const std::pair<const char*, const char*> cases[] = {
      {"llama_f16_yarn.gguf",
       "RoPE scaling: YaRN, factor 4, original context 64, beta_fast 32, beta_slow 1, "
       "attention factor 1.13863\n"},
      {"rope_linear", "RoPE scaling: linear, factor 4\n"},
      {"rope_gemma3_linear", "RoPE scaling: linear, factor 8 (global layers only)\n"},
  };
  for (const auto& [model, line] : cases) {
    char out[16384], error[256];
    ASSERT_EQ(staticlm_describe_model((kDir + "/" + model).c_str(), out, sizeof(out), error,
                                      sizeof(error)),
              STATICLM_OK)
        << error;
    EXPECT_NE(std::strstr(out, line), nullptr) << model << ":\n" << out;
  }
}

// GgufFile::AddComputedTensor: the tensor lies after the file's bytes inside the tensor data
// span, holds the values, and leaves every tensor of the file as it was; a second call, a name
// the file has, or a file not opened from a path are refused.
TEST(RopeScalingTest, ComputedTensorFollowsTheFileInOneSpan) {
  gguf::GgufFile plain, file;
  const std::string path = kDir + "/llama_f16_yarn.gguf";
  ASSERT_TRUE(plain.Open(path.c_str()).ok());
  ASSERT_TRUE(file.Open(path.c_str()).ok());
  const float values[8] = {1.0f, 1.5f, 2.0f, 2.5f, 3.0f, 3.5f, 4.0f, 4.5f};
  EXPECT_FALSE(file.AddComputedTensor("token_embd.weight", values, 8).ok());
  ASSERT_TRUE(file.AddComputedTensor("rope_freqs.weight", values, 8).ok());
  const gguf::TensorInfo* t = file.FindTensor("rope_freqs.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->type, DType::kF32);
  EXPECT_EQ(t->ne[0], 8);
  EXPECT_EQ(t->offset % file.alignment(), 0u);
  EXPECT_GE(t->data, file.file_data() + file.file_bytes());
  EXPECT_EQ(t->data, file.tensor_data() + t->offset);
  EXPECT_EQ(t->offset + t->bytes, file.tensor_data_bytes());
  EXPECT_EQ(std::memcmp(t->data, values, sizeof(values)), 0);
  ASSERT_EQ(file.tensors().size(), plain.tensors().size() + 1);
  for (const gguf::TensorInfo& p : plain.tensors()) {
    const gguf::TensorInfo* q = file.FindTensor(p.name);
    ASSERT_NE(q, nullptr) << p.name;
    EXPECT_EQ(q->offset, p.offset);
    EXPECT_EQ(std::memcmp(q->data, p.data, p.bytes), 0) << p.name;
  }
  EXPECT_EQ(file.file_bytes(), plain.file_bytes());
  EXPECT_FALSE(file.AddComputedTensor("other.weight", values, 8).ok());  // once
  std::vector<uint8_t> bytes(plain.file_data(), plain.file_data() + plain.file_bytes());
  gguf::GgufFile borrowed;
  ASSERT_TRUE(borrowed.Parse(bytes.data(), bytes.size()).ok());
  EXPECT_FALSE(borrowed.AddComputedTensor("rope_freqs.weight", values, 8).ok());
}

}  // namespace
}  // namespace staticlm
