// The test-support GGUF builders: weight encodings and the tiny Llama model, checked through
// the real reader (and against the real SmolLM2 file's tokenizer metadata when present).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <random>
#include <string>

#include "runtime/gguf/gguf_file.h"
#include "tests/support/gguf_writer.h"
#include "tests/support/weight_encoding.h"

namespace staticlm::test {
namespace {

using gguf::GgufFile;
using gguf::TensorInfo;

TEST(WeightEncoding, HalfConversion) {
  EXPECT_EQ(FloatToHalf(0.0f), 0x0000);
  EXPECT_EQ(FloatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00) << "rounds up to inf";
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -24)), 0x0001) << "smallest subnormal";
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -25)), 0x0000) << "ties to even";
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00) << "ties to even";
  EXPECT_EQ(FloatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02) << "ties to even";
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    ASSERT_EQ(FloatToHalf(HalfToFloat(static_cast<uint16_t>(h))), h) << h;
    ASSERT_EQ(FloatToHalf(HalfToFloat(static_cast<uint16_t>(h | 0x8000))), h | 0x8000) << h;
  }
  EXPECT_EQ(FloatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(Bf16ToFloat(0xc040), -3.0f);
}

TEST(WeightEncoding, QuantizedBlocksDecodeClose) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<float> x(32 * 16);
  for (float& v : x) v = normal(rng);
  x[5] = 0.3f;  // an outlier sets its block's scale
  struct Case {
    DType type;
    // In units of the block's quantization step. Q4_0 clips the end opposite its scale's
    // sign to 7 steps, so values there may be off by up to a whole step.
    float max_error_in_steps;
  };
  const Case cases[] = {{DType::kQ8_0, 0.51f}, {DType::kQ4_0, 1.0f}, {DType::kQ4_1, 0.51f}};
  for (const Case& c : cases) {
    std::vector<uint8_t> bytes = EncodeFloats(c.type, x);
    ASSERT_EQ(bytes.size(), DTypeBytes(c.type, x.size()));
    std::vector<float> y = DecodeFloats(c.type, bytes.data(), x.size());
    for (size_t b = 0; b < x.size() / 32; ++b) {
      float lo = x[32 * b];
      float hi = x[32 * b];
      for (int j = 0; j < 32; ++j) {
        lo = std::min(lo, x[32 * b + j]);
        hi = std::max(hi, x[32 * b + j]);
      }
      float amax = std::max(std::fabs(lo), std::fabs(hi));
      float step = c.type == DType::kQ8_0   ? amax / 127
                   : c.type == DType::kQ4_0 ? amax / 8
                                            : (hi - lo) / 15;
      for (int j = 0; j < 32; ++j) {
        size_t i = 32 * b + j;
        // f16 rounding of the scale adds ~0.1% of a value on top of half a step.
        ASSERT_LE(std::fabs(y[i] - x[i]), c.max_error_in_steps * step + 2e-3f * amax)
            << DTypeName(c.type) << " element " << i;
      }
    }
  }
  std::vector<float> same(32, 0.25f);
  std::vector<float> back = DecodeFloats(DType::kQ4_1, EncodeFloats(DType::kQ4_1, same).data(), 32);
  for (float v : back) EXPECT_EQ(v, 0.25f) << "a constant block is exact in Q4_1";
}

TEST(TinyLlama, VocabularyLayout) {
  std::vector<std::string> tokens = TinyLlamaTokens();
  ASSERT_EQ(tokens.size(), 17u + 256u + TinyLlamaMerges().size());
  EXPECT_EQ(tokens[0], "<|endoftext|>");
  EXPECT_EQ(tokens[1], "<|im_start|>");
  EXPECT_EQ(tokens[2], "<|im_end|>");
  EXPECT_EQ(tokens[17], "!");
  EXPECT_EQ(tokens[17 + 93], "~");
  EXPECT_EQ(tokens[17 + 188], "\xc4\x80") << "byte 0 is U+0100";
  EXPECT_EQ(tokens[17 + 188 + 32], "\xc4\xa0") << "the space byte is U+0120 'Ġ'";
  EXPECT_EQ(tokens[17 + 256], "Ġt");
  for (size_t i = 0; i < tokens.size(); ++i) {
    for (size_t j = i + 1; j < tokens.size(); ++j) ASSERT_NE(tokens[i], tokens[j]) << i << " " << j;
  }
  // Each merge joins two tokens that exist before it.
  const std::vector<std::string> merges = TinyLlamaMerges();
  for (size_t m = 0; m < merges.size(); ++m) {
    const std::string& merge = merges[m];
    size_t space = merge.find(' ');
    ASSERT_NE(space, std::string::npos);
    auto end = tokens.begin() + 17 + 256 + m;
    EXPECT_NE(std::find(tokens.begin(), end, merge.substr(0, space)), end) << merge;
    EXPECT_NE(std::find(tokens.begin(), end, merge.substr(space + 1)), end) << merge;
  }
}

void ExpectU32(const GgufFile& f, const char* key, uint32_t expected) {
  uint32_t v = 0;
  Status s = f.GetU32(key, &v);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(v, expected) << key;
}

TEST(TinyLlama, LoadsForEveryWeightType) {
  const DType types[] = {DType::kF32, DType::kF16, DType::kQ8_0, DType::kQ4_0, DType::kQ4_1};
  for (DType type : types) {
    TinyLlamaOptions o;
    o.weight_type = type;
    o.embedding_type = type == DType::kQ4_1 ? DType::kQ8_0 : type;  // as SmolLM2 does
    GgufWriter w;
    ASSERT_TRUE(BuildTinyLlama(o, &w).ok());
    std::vector<uint8_t> bytes = w.Serialize();
    GgufFile f;
    Status s = f.Parse(bytes.data(), bytes.size());
    ASSERT_TRUE(s.ok()) << DTypeName(type) << ": " << s.message();

    std::string_view arch;
    ASSERT_TRUE(f.GetString("general.architecture", &arch).ok());
    EXPECT_EQ(arch, "llama");
    const uint32_t n_vocab = static_cast<uint32_t>(TinyLlamaTokens().size());
    ExpectU32(f, "llama.block_count", 2);
    ExpectU32(f, "llama.embedding_length", 64);
    ExpectU32(f, "llama.attention.head_count", 4);
    ExpectU32(f, "llama.attention.head_count_kv", 2);
    ExpectU32(f, "llama.feed_forward_length", 96);
    ExpectU32(f, "llama.context_length", 256);
    ExpectU32(f, "llama.vocab_size", n_vocab);
    ExpectU32(f, "tokenizer.ggml.bos_token_id", 1);
    ExpectU32(f, "tokenizer.ggml.eos_token_id", 2);
    float eps = 0;
    ASSERT_TRUE(f.GetF32("llama.attention.layer_norm_rms_epsilon", &eps).ok());
    EXPECT_EQ(eps, 1e-5f);
    bool add_bos = true;
    ASSERT_TRUE(f.GetBool("tokenizer.ggml.add_bos_token", &add_bos).ok());
    EXPECT_FALSE(add_bos);
    std::vector<std::string_view> tokens;
    ASSERT_TRUE(f.GetStringArray("tokenizer.ggml.tokens", &tokens).ok());
    EXPECT_EQ(tokens.size(), n_vocab);
    std::vector<int32_t> token_types;
    ASSERT_TRUE(f.GetI32Array("tokenizer.ggml.token_type", &token_types).ok());
    ASSERT_EQ(token_types.size(), n_vocab);
    EXPECT_EQ(token_types[2], 3);
    EXPECT_EQ(token_types[17], 1);

    EXPECT_EQ(f.tensors().size(), 2u + 2u * 9u);
    EXPECT_EQ(f.FindTensor("output.weight"), nullptr);
    const TensorInfo* embd = f.FindTensor("token_embd.weight");
    ASSERT_NE(embd, nullptr);
    EXPECT_EQ(embd->type, o.embedding_type);
    EXPECT_EQ(embd->ne[0], 64);
    EXPECT_EQ(embd->ne[1], n_vocab);
    struct Shape {
      const char* name;
      int64_t ne0, ne1;
    };
    const Shape shapes[] = {{"attn_q", 64, 64},      {"attn_k", 64, 32},   {"attn_v", 64, 32},
                            {"attn_output", 64, 64}, {"ffn_gate", 64, 96}, {"ffn_up", 64, 96},
                            {"ffn_down", 96, 64}};
    for (int layer = 0; layer < 2; ++layer) {
      std::string p = "blk." + std::to_string(layer) + ".";
      for (const Shape& sh : shapes) {
        const TensorInfo* t = f.FindTensor(p + sh.name + ".weight");
        ASSERT_NE(t, nullptr) << p << sh.name;
        EXPECT_EQ(t->type, type);
        EXPECT_EQ(t->ne[0], sh.ne0) << sh.name;
        EXPECT_EQ(t->ne[1], sh.ne1) << sh.name;
      }
      for (const char* norm : {"attn_norm", "ffn_norm"}) {
        const TensorInfo* t = f.FindTensor(p + norm + ".weight");
        ASSERT_NE(t, nullptr);
        EXPECT_EQ(t->type, DType::kF32);
        std::vector<float> v = DecodeFloats(DType::kF32, t->data, 64);
        for (float x : v) EXPECT_NEAR(x, 1.0f, 0.1f);
      }
    }
    // Weights look like N(0, 0.05) after decoding.
    const TensorInfo* q = f.FindTensor("blk.1.attn_q.weight");
    std::vector<float> v = DecodeFloats(q->type, q->data, 64 * 64);
    double sum = 0;
    double sum_sq = 0;
    for (float x : v) {
      sum += x;
      sum_sq += double(x) * x;
    }
    double mean = sum / v.size();
    double stddev = std::sqrt(sum_sq / v.size() - mean * mean);
    EXPECT_NEAR(mean, 0.0, 0.005) << DTypeName(type);
    EXPECT_NEAR(stddev, 0.05, 0.006) << DTypeName(type);
  }
}

TEST(TinyLlama, DeterministicPerSeedAndWritesFiles) {
  TinyLlamaOptions o;
  o.weight_type = DType::kQ4_1;
  GgufWriter a, b, c;
  ASSERT_TRUE(BuildTinyLlama(o, &a).ok());
  ASSERT_TRUE(BuildTinyLlama(o, &b).ok());
  o.seed = 2;
  ASSERT_TRUE(BuildTinyLlama(o, &c).ok());
  EXPECT_EQ(a.Serialize(), b.Serialize());
  EXPECT_NE(a.Serialize(), c.Serialize());

  o.untied_output = true;
  o.alignment = 64;
  o.block_count = 3;
  std::string path = std::string(::testing::TempDir()) + "/tiny_llama." + std::to_string(getpid());
  ASSERT_TRUE(WriteTinyLlama(path.c_str(), o).ok());
  GgufFile f;
  Status s = f.Open(path.c_str());
  std::remove(path.c_str());
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_NE(f.FindTensor("output.weight"), nullptr);
  EXPECT_NE(f.FindTensor("blk.2.ffn_down.weight"), nullptr);

  o.weight_type = DType::kQ4_0;
  o.feed_forward_length = 80;
  EXPECT_EQ(BuildTinyLlama(o, &a).code(), StatusCode::kInvalidArgument);
}

TEST(TinyLlama, TokenizerMetadataMatchesSmolLM2) {
  if (access(STATICLM_DEFAULT_MODEL, R_OK) != 0) GTEST_SKIP() << "no model";
  GgufFile real;
  ASSERT_TRUE(real.Open(STATICLM_DEFAULT_MODEL).ok());
  std::string_view chat_template;
  ASSERT_TRUE(real.GetString("tokenizer.chat_template", &chat_template).ok());
  EXPECT_EQ(chat_template, SmolLM2ChatTemplate());
  std::string_view s;
  ASSERT_TRUE(real.GetString("tokenizer.ggml.model", &s).ok());
  EXPECT_EQ(s, "gpt2");
  ASSERT_TRUE(real.GetString("tokenizer.ggml.pre", &s).ok());
  EXPECT_EQ(s, "smollm");

  std::vector<std::string_view> real_tokens, real_merges;
  std::vector<int32_t> real_types;
  ASSERT_TRUE(real.GetStringArray("tokenizer.ggml.tokens", &real_tokens).ok());
  ASSERT_TRUE(real.GetStringArray("tokenizer.ggml.merges", &real_merges).ok());
  ASSERT_TRUE(real.GetI32Array("tokenizer.ggml.token_type", &real_types).ok());
  std::vector<std::string> tokens = TinyLlamaTokens();
  for (int i = 0; i < 17; ++i) {
    EXPECT_EQ(tokens[i], real_tokens[i]) << i;
    EXPECT_EQ(real_types[i], 3) << i;
  }
  EXPECT_EQ(real_types[17], 1) << "the first ordinary token is normal";
  std::vector<std::string> merges = TinyLlamaMerges();
  for (size_t m = 0; m < merges.size(); ++m) EXPECT_EQ(merges[m], real_merges[m]) << m;
  // Every single-character token of the real vocabulary is in the tiny byte alphabet.
  for (size_t i = 17; i < 17 + 235; ++i) {
    EXPECT_NE(std::find(tokens.begin() + 17, tokens.begin() + 17 + 256, real_tokens[i]),
              tokens.begin() + 17 + 256)
        << real_tokens[i];
  }
}

}  // namespace
}  // namespace staticlm::test
