// The conversions a Hugging Face folder's tensors get at init (runtime/hf/weight_convert.h):
// F16/BF16 to F32 against the test encoder's conversions; Q8_0 and Q4_0 byte for byte against
// the blocks llama.cpp's converter and gguf-py wrote for the same folder; Q4_K decoded by the CPU
// backend's reference decoder within a code step of the input, on rows with positive, negative,
// mixed, constant and zero values.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "backends/cpu/dequantize.h"
#include "runtime/gguf/gguf_file.h"
#include "runtime/hf/hf_folder.h"
#include "runtime/hf/weight_convert.h"
#include "tests/support/weight_encoding.h"

namespace {

using staticlm::DType;

std::vector<float> RandomRow(int n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = u(rng);
  return x;
}

TEST(HfWeightConvert, HalfAndBf16ToF32) {
  std::vector<float> x = RandomRow(64, -3.0f, 3.0f, 1);
  for (DType type : {DType::kF16, DType::kBF16, DType::kF32}) {
    std::vector<uint8_t> bytes = staticlm::test::EncodeFloats(type, x);
    std::vector<float> want = staticlm::test::DecodeFloats(type, bytes.data(), x.size());
    std::vector<float> got(x.size());
    staticlm::hf::ToF32(type, bytes.data(), static_cast<int64_t>(x.size()), got.data());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), 4 * x.size()), 0) << staticlm::DTypeName(type);
  }
}

// The F32 folder quantized at init against the blocks llama.cpp's converter (Q8_0) and gguf-py
// (Q4_0) wrote for it: byte for byte, for every matrix but q and k (whose rows the converter
// permutes for adjacent-pair RoPE).
void CheckSameBlocks(const char* quantize, const char* gguf_name) {
  const std::string dir = STATICLM_HF_MODELS_DIR;
  staticlm::hf::HfFolder holder;
  staticlm::gguf::GgufFile folder, gguf;
  staticlm::Status s = holder.Open((dir + "/llama_f32").c_str(), quantize, &folder);
  ASSERT_TRUE(s.ok()) << s.message();
  s = gguf.Open((dir + "/" + gguf_name).c_str());
  ASSERT_TRUE(s.ok()) << s.message();
  int compared = 0;
  for (const staticlm::gguf::TensorInfo& want : gguf.tensors()) {
    const staticlm::gguf::TensorInfo* got = folder.FindTensor(want.name);
    ASSERT_NE(got, nullptr) << want.name;
    ASSERT_EQ(got->type, want.type) << want.name;
    ASSERT_EQ(got->bytes, want.bytes) << want.name;
    const std::string_view name = want.name;
    if (name.find("attn_q.") != name.npos || name.find("attn_k.") != name.npos) continue;
    EXPECT_EQ(std::memcmp(got->data, want.data, want.bytes), 0) << want.name;
    compared += want.n_dims == 2 ? 1 : 0;
  }
  EXPECT_EQ(compared, 1 + 2 * 5);  // the embedding table and five matrices per layer
}

TEST(HfWeightConvert, Q8_0BlocksAreTheConverters) {
  CheckSameBlocks("q8_0", "llama_q8_0.gguf");
}

TEST(HfWeightConvert, Q4_0BlocksAreGgufPys) {
  CheckSameBlocks("q4_0", "llama_q4_0.gguf");
}

TEST(HfWeightConvert, Q4_KDecodesWithinACodeStep) {
  struct Case {
    float lo, hi;
  } cases[] = {{-1.0f, 1.0f},  {0.5f, 3.0f}, {-4.0f, -0.25f},
               {-0.01f, 5.0f}, {2.0f, 2.0f}, {0.0f, 0.0f}};
  uint32_t seed = 10;
  for (const Case& c : cases) {
    std::vector<float> x = RandomRow(512, c.lo, c.hi, seed++);
    std::vector<uint8_t> q(staticlm::DTypeBytes(DType::kQ4_K, x.size()));
    staticlm::hf::QuantizeRow(DType::kQ4_K, x.data(), static_cast<int64_t>(x.size()), q.data());
    std::vector<float> y(x.size());
    staticlm::cpu::DequantizeRow(DType::kQ4_K, q.data(), static_cast<int64_t>(x.size()), y.data());
    // Per 32-value sub-block, a code step is (max − min(0, ·)) / 15; the 6-bit scales round it
    // by at most 1/63 of the block's largest and the minimum by 1/63 of the largest minimum.
    const float span = std::fmax(std::fabs(c.lo), std::fabs(c.hi)) + std::fabs(c.hi - c.lo);
    const float bound = span / 15.0f * 0.5f + span / 63.0f * 8.0f + 1e-6f;
    double sum_sq = 0.0;
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_LE(std::fabs(x[i] - y[i]), bound) << "[" << c.lo << ", " << c.hi << "] at " << i;
      sum_sq += (x[i] - y[i]) * (x[i] - y[i]);
    }
    // On average well inside half a step (uniform values: about step / sqrt(12)).
    EXPECT_LE(std::sqrt(sum_sq / x.size()), span / 15.0f * 0.45f + 1e-6f) << c.lo << ", " << c.hi;
  }
}

}  // namespace
