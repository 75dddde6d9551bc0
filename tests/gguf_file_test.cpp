// GgufFile on valid input: the real SmolLM2 model, and round trips through GgufWriter.
#include "runtime/gguf/gguf_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <iterator>
#include <map>
#include <string>

#include "tests/support/gguf_samples.h"
#include "tests/support/gguf_writer.h"

namespace staticlm::gguf {
namespace {

using test::GgufWriter;
using test::SampleGguf;
using test::SampleTensorByte;

bool FileExists(const char* path) {
  return access(path, R_OK) == 0;
}

std::string TempPath(const char* name) {
  return std::string(::testing::TempDir()) + "/" + name + "." + std::to_string(getpid());
}

TEST(GgufRealModel, ParsesSmolLM2) {
  if (!FileExists(STATICLM_DEFAULT_MODEL)) GTEST_SKIP() << "no model at " STATICLM_DEFAULT_MODEL;
  GgufFile f;
  Status s = f.Open(STATICLM_DEFAULT_MODEL);
  ASSERT_TRUE(s.ok()) << s.message();

  std::string_view arch;
  ASSERT_TRUE(f.GetString("general.architecture", &arch).ok());
  EXPECT_EQ(arch, "llama");
  struct Expected {
    const char* key;
    uint32_t value;
  };
  const Expected hparams[] = {
      {"llama.block_count", 30},           {"llama.embedding_length", 576},
      {"llama.attention.head_count", 9},   {"llama.attention.head_count_kv", 3},
      {"llama.feed_forward_length", 1536}, {"llama.vocab_size", 49152},
  };
  for (const Expected& e : hparams) {
    uint32_t v = 0;
    Status g = f.GetU32(e.key, &v);
    ASSERT_TRUE(g.ok()) << g.message();
    EXPECT_EQ(v, e.value) << e.key;
  }
  float rope_base = 0;
  ASSERT_TRUE(f.GetF32("llama.rope.freq_base", &rope_base).ok());
  EXPECT_EQ(rope_base, 100000.0f);

  std::vector<std::string_view> tokens;
  ASSERT_TRUE(f.GetStringArray("tokenizer.ggml.tokens", &tokens).ok());
  EXPECT_EQ(tokens.size(), 49152u);
  EXPECT_EQ(tokens[1], "<|im_start|>");
  std::vector<int32_t> token_types;
  ASSERT_TRUE(f.GetI32Array("tokenizer.ggml.token_type", &token_types).ok());
  EXPECT_EQ(token_types.size(), 49152u);

  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.tensors().size(), 2u + 30u * 9u);
  std::map<std::string, int> histogram;
  for (const TensorInfo& t : f.tensors()) {
    ++histogram[DTypeName(t.type)];
    EXPECT_GE(t.data, f.file_data());
    EXPECT_LE(t.data + t.bytes, f.file_data() + f.file_bytes());
  }
  for (const auto& [name, count] : histogram)
    std::printf("  %-5s %d tensors\n", name.c_str(), count);

  const TensorInfo* embd = f.FindTensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  std::printf("  token_embd.weight: %s [%lld, %lld]\n", DTypeName(embd->type),
              static_cast<long long>(embd->ne[0]), static_cast<long long>(embd->ne[1]));
  EXPECT_TRUE(IsKnownDType(static_cast<uint32_t>(embd->type)));
  EXPECT_EQ(embd->n_dims, 2u);
  EXPECT_EQ(embd->ne[0], 576);
  EXPECT_EQ(embd->ne[1], 49152);
  EXPECT_EQ(f.FindTensor("output.weight"), nullptr) << "SmolLM2 ties its output head";

  const char* layer_weights[] = {"attn_q",   "attn_k", "attn_v",  "attn_output",
                                 "ffn_gate", "ffn_up", "ffn_down"};
  for (int layer = 0; layer < 30; ++layer) {
    for (const char* w : layer_weights) {
      std::string name = "blk." + std::to_string(layer) + "." + w + ".weight";
      const TensorInfo* t = nullptr;
      Status r = f.RequireTensor(name, &t);
      ASSERT_TRUE(r.ok()) << r.message();
      EXPECT_EQ(t->type, DType::kQ4_1) << name;
    }
    const TensorInfo* norm = f.FindTensor("blk." + std::to_string(layer) + ".attn_norm.weight");
    ASSERT_NE(norm, nullptr);
    EXPECT_EQ(norm->type, DType::kF32);
  }
  const TensorInfo* k = f.FindTensor("blk.0.attn_k.weight");
  EXPECT_EQ(k->ne[0], 576);
  EXPECT_EQ(k->ne[1], 192);
  EXPECT_EQ(k->bytes, 576u * 192u / 32u * 20u);
}

TEST(GgufRoundTrip, ScalarsOfEveryType) {
  std::vector<uint8_t> bytes = SampleGguf();
  GgufFile f;
  Status s = f.Parse(bytes.data(), bytes.size());
  ASSERT_TRUE(s.ok()) << s.message();

  uint32_t u32 = 0;
  ASSERT_TRUE(f.GetU32("t.u32", &u32).ok());
  EXPECT_EQ(u32, 4000000000u);
  ASSERT_TRUE(f.GetU32("t.u8", &u32).ok());
  EXPECT_EQ(u32, 200u);
  ASSERT_TRUE(f.GetU32("t.u16", &u32).ok());
  EXPECT_EQ(u32, 60000u);
  int32_t i32 = 0;
  ASSERT_TRUE(f.GetI32("t.i32", &i32).ok());
  EXPECT_EQ(i32, -2000000000);
  ASSERT_TRUE(f.GetI32("t.i8", &i32).ok());
  EXPECT_EQ(i32, -100);
  ASSERT_TRUE(f.GetI32("t.i16", &i32).ok());
  EXPECT_EQ(i32, -30000);
  uint64_t u64 = 0;
  ASSERT_TRUE(f.GetU64("t.u64", &u64).ok());
  EXPECT_EQ(u64, uint64_t{1} << 40);
  float f32 = 0;
  ASSERT_TRUE(f.GetF32("t.f32", &f32).ok());
  EXPECT_EQ(f32, 1.5f);
  ASSERT_TRUE(f.GetF32("t.f64", &f32).ok());
  EXPECT_EQ(f32, 2.25f);
  bool b = false;
  ASSERT_TRUE(f.GetBool("t.bool", &b).ok());
  EXPECT_TRUE(b);
  std::string_view str;
  ASSERT_TRUE(f.GetString("t.string", &str).ok());
  EXPECT_EQ(str, "héllo");
  ASSERT_TRUE(f.GetString("t.empty_string", &str).ok());
  EXPECT_EQ(str, "");

  const KeyValue* i64 = f.FindKey("t.i64");
  ASSERT_NE(i64, nullptr);
  EXPECT_EQ(i64->type, ValueType::kI64);
  int64_t raw;
  std::memcpy(&raw, i64->value, 8);
  EXPECT_EQ(raw, -(int64_t{1} << 40));
  EXPECT_EQ(f.keys().size(), 22u);
  EXPECT_EQ(f.keys()[0].key, "general.architecture");
}

TEST(GgufRoundTrip, GetterErrorsNameKeyAndTypes) {
  std::vector<uint8_t> bytes = SampleGguf();
  GgufFile f;
  ASSERT_TRUE(f.Parse(bytes.data(), bytes.size()).ok());
  uint32_t u32 = 0;
  int32_t i32 = 0;
  uint64_t u64 = 0;
  float f32 = 0;
  bool b = false;
  std::string_view str;

  Status s = f.GetU32("no.such.key", &u32);
  EXPECT_EQ(s.code(), StatusCode::kFormatError);
  EXPECT_STREQ(s.message(), "missing key 'no.such.key'");
  s = f.GetU32("t.string", &u32);
  EXPECT_EQ(s.code(), StatusCode::kFormatError);
  EXPECT_STREQ(s.message(), "key 't.string': expected u32, found string");
  s = f.GetString("t.strings", &str);
  EXPECT_STREQ(s.message(), "key 't.strings': expected string, found array of string");
  EXPECT_FALSE(f.GetU32("t.i32", &u32).ok()) << "negative into u32";
  EXPECT_FALSE(f.GetU32("t.u64", &u32).ok()) << "2^40 into u32";
  s = f.GetI32("t.u32", &i32);
  EXPECT_FALSE(s.ok()) << "4e9 into i32";
  EXPECT_NE(std::string(s.message()).find("does not fit in i32"), std::string::npos);
  EXPECT_FALSE(f.GetU64("t.i64", &u64).ok());
  EXPECT_FALSE(f.GetF32("t.u32", &f32).ok());
  EXPECT_FALSE(f.GetBool("t.u8", &b).ok());
  std::vector<int32_t> ints;
  std::vector<float> floats;
  std::vector<std::string_view> strings;
  EXPECT_FALSE(f.GetI32Array("t.f32s", &ints).ok());
  EXPECT_FALSE(f.GetF32Array("t.i32s", &floats).ok());
  EXPECT_FALSE(f.GetStringArray("t.u8s", &strings).ok());
  EXPECT_FALSE(f.GetI32Array("t.nested", &ints).ok());
  EXPECT_FALSE(f.GetI32Array("t.u8", &ints).ok()) << "a scalar is not an array";
}

TEST(GgufRoundTrip, Arrays) {
  std::vector<uint8_t> bytes = SampleGguf();
  GgufFile f;
  ASSERT_TRUE(f.Parse(bytes.data(), bytes.size()).ok());
  std::vector<std::string_view> strings;
  ASSERT_TRUE(f.GetStringArray("t.strings", &strings).ok());
  EXPECT_EQ(strings, (std::vector<std::string_view>{"a", "bc", "", "Ġthe"}));
  std::vector<int32_t> ints;
  ASSERT_TRUE(f.GetI32Array("t.i32s", &ints).ok());
  EXPECT_EQ(ints, (std::vector<int32_t>{-1, 0, 7}));
  ASSERT_TRUE(f.GetI32Array("t.u8s", &ints).ok());
  EXPECT_EQ(ints, (std::vector<int32_t>{1, 2, 255}));
  ASSERT_TRUE(f.GetI32Array("t.empty", &ints).ok());
  EXPECT_TRUE(ints.empty());
  std::vector<float> floats;
  ASSERT_TRUE(f.GetF32Array("t.f32s", &floats).ok());
  EXPECT_EQ(floats, (std::vector<float>{0.5f, -2.0f}));
  ASSERT_TRUE(f.GetF32Array("t.f64s", &floats).ok());
  EXPECT_EQ(floats, (std::vector<float>{0.25f, 1000.0f}));

  const KeyValue* bools = f.FindKey("t.bools");
  ASSERT_NE(bools, nullptr);
  EXPECT_EQ(bools->array_type, ValueType::kBool);
  EXPECT_EQ(bools->array_count, 3u);
  EXPECT_EQ(bools->value[1], 0);
  const KeyValue* nested = f.FindKey("t.nested");
  ASSERT_NE(nested, nullptr);
  EXPECT_EQ(nested->type, ValueType::kArray);
  EXPECT_EQ(nested->array_type, ValueType::kArray);
  EXPECT_EQ(nested->array_count, 2u);
  EXPECT_EQ(nested->value_bytes, 12u + 4u + 12u);
}

TEST(GgufRoundTrip, TensorsOfEachSupportedType) {
  std::vector<uint8_t> bytes = SampleGguf();
  GgufFile f;
  ASSERT_TRUE(f.Parse(bytes.data(), bytes.size()).ok());
  struct Expected {
    const char* name;
    DType type;
    uint32_t n_dims;
    int64_t ne0, ne1;
    uint64_t bytes;
  };
  const Expected expected[] = {
      {"t_f32", DType::kF32, 2, 4, 2, 32},    {"t_f16", DType::kF16, 1, 8, 1, 16},
      {"t_bf16", DType::kBF16, 1, 4, 1, 8},   {"t_q8_0", DType::kQ8_0, 2, 32, 2, 68},
      {"t_q4_0", DType::kQ4_0, 1, 32, 1, 18}, {"t_q4_1", DType::kQ4_1, 1, 64, 1, 40},
      {"t_i32", DType::kI32, 1, 3, 1, 12},
  };
  ASSERT_EQ(f.tensors().size(), std::size(expected));
  EXPECT_EQ(f.tensor_data(), bytes.data() + f.tensor_data_offset());
  EXPECT_EQ(f.tensor_data_offset() % 32, 0u);
  for (size_t i = 0; i < std::size(expected); ++i) {
    const Expected& e = expected[i];
    const TensorInfo* t = f.FindTensor(e.name);
    ASSERT_NE(t, nullptr) << e.name;
    EXPECT_EQ(t, &f.tensors()[i]) << "file order is kept";
    EXPECT_EQ(t->type, e.type) << e.name;
    EXPECT_EQ(t->n_dims, e.n_dims) << e.name;
    EXPECT_EQ(t->ne[0], e.ne0) << e.name;
    EXPECT_EQ(t->ne[1], e.ne1) << e.name;
    EXPECT_EQ(t->ne[2], 1) << e.name;
    EXPECT_EQ(t->ne[3], 1) << e.name;
    EXPECT_EQ(t->bytes, e.bytes) << e.name;
    EXPECT_EQ(t->offset % 32, 0u) << e.name;
    EXPECT_EQ(t->data, f.tensor_data() + t->offset) << "used in place";
    for (size_t b = 0; b < t->bytes; ++b) {
      ASSERT_EQ(t->data[b], SampleTensorByte(i, b)) << e.name << " byte " << b;
    }
  }
  EXPECT_EQ(f.FindTensor("t_missing"), nullptr);
  const TensorInfo* missing = nullptr;
  Status s = f.RequireTensor("t_missing", &missing);
  EXPECT_STREQ(s.message(), "missing tensor 't_missing'");
}

TEST(GgufRoundTrip, Version2AndWideAlignment) {
  GgufWriter w = test::SampleGgufWriter();
  w.SetVersion(2);
  w.SetAlignment(256);
  std::vector<uint8_t> bytes = w.Serialize();
  GgufFile f;
  Status s = f.Parse(bytes.data(), bytes.size());
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(f.version(), 2u);
  EXPECT_EQ(f.alignment(), 256u);
  EXPECT_EQ(f.tensor_data_offset(), w.DataSectionOffset());
  EXPECT_EQ(f.tensor_data_offset() % 256, 0u);
  for (const TensorInfo& t : f.tensors()) EXPECT_EQ(t.offset % 256, 0u) << t.name;
  EXPECT_EQ(f.FindTensor("t_q4_1")->offset, 5u * 256u);
}

TEST(GgufRoundTrip, MetadataOnlyFileNeedsNoPadding) {
  GgufWriter w;
  w.AddString("general.architecture", "llama");
  std::vector<uint8_t> bytes = w.Serialize();
  bytes.resize(24 + 8 + 20 + 4 + 8 + 5);  // drop the padding after the last key
  GgufFile f;
  Status s = f.Parse(bytes.data(), bytes.size());
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(f.tensors().empty());
  EXPECT_EQ(f.tensor_data_bytes(), 0u);
}

TEST(GgufRoundTrip, OpenFromPathAndMove) {
  std::string path = TempPath("gguf_roundtrip.gguf");
  ASSERT_TRUE(test::SampleGgufWriter().WriteFile(path.c_str()).ok());
  GgufFile f;
  Status s = f.Open(path.c_str());
  ASSERT_TRUE(s.ok()) << s.message();
  std::remove(path.c_str());  // the mapping stays valid
  GgufFile moved = std::move(f);
  EXPECT_TRUE(f.tensors().empty());
  EXPECT_EQ(f.FindKey("general.architecture"), nullptr);
  EXPECT_EQ(f.file_data(), nullptr);
  const TensorInfo* t = moved.FindTensor("t_i32");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->data[0], SampleTensorByte(6, 0));
  std::string_view arch;
  ASSERT_TRUE(moved.GetString("general.architecture", &arch).ok());
  EXPECT_EQ(arch, "llama");
}

}  // namespace
}  // namespace staticlm::gguf
