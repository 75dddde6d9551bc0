// Hugging Face folders with missing, extra, truncated or malformed files: each is a one-line
// error naming the file (and the key or tensor at fault), never a crash. The folders are
// copies of tests/models/hf/llama_f32 (and llama_sharded) with one thing broken.
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

#include "staticlm/staticlm.h"
#include "tests/support/temp_path.h"

namespace {

const std::string kDir = STATICLM_HF_MODELS_DIR;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A private copy of tests/models/hf/<source> (its config and weights) named `name`.
std::string CopyFolder(const std::string& name, const std::string& source = "llama_f32") {
  const std::string dir = staticlm::test::TempPath(name);
  ::mkdir(dir.c_str(), 0755);
  for (const char* f : {"config.json", "model.safetensors", "model.safetensors.index.json",
                        "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}) {
    const std::string from = kDir + "/" + source + "/" + f;
    struct stat st;
    if (::stat(from.c_str(), &st) == 0) WriteFile(dir + "/" + f, ReadFile(from));
  }
  return dir;
}

// Replaces the first `from` in `path` by `to` (in a safetensors header, of the same length, so
// that the offsets stay put).
void Patch(const std::string& path, const std::string& from, const std::string& to) {
  std::string bytes = ReadFile(path);
  size_t at = bytes.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  bytes.replace(at, from.size(), to);
  WriteFile(path, bytes);
}

struct Outcome {
  staticlm_status status;
  std::string error;
};

// What `staticlm inspect` (staticlm_describe_model) says of `dir`.
Outcome Describe(const std::string& dir) {
  static char out[16384];
  char error[512] = {0};
  staticlm_status s = staticlm_describe_model(dir.c_str(), out, sizeof(out), error, sizeof(error));
  return {s, error};
}

// What staticlm_create says of `dir` (a plan is built: missing tensors show here).
Outcome Create(const std::string& dir) {
  staticlm_limits l;
  staticlm_limits_default(&l);
  l.max_context = 64;
  staticlm_context* ctx = nullptr;
  char error[512] = {0};
  staticlm_status s = staticlm_create(dir.c_str(), &l, &ctx, error, sizeof(error));
  staticlm_destroy(ctx);
  return {s, error};
}

// The error is one line and names every one of `parts`.
void ExpectError(const Outcome& o, staticlm_status status,
                 std::initializer_list<const char*> parts) {
  EXPECT_EQ(o.status, status) << o.error;
  EXPECT_EQ(o.error.find('\n'), std::string::npos) << o.error;
  for (const char* p : parts)
    EXPECT_NE(o.error.find(p), std::string::npos) << p << " in: " << o.error;
}

TEST(HfFolderErrors, TheUnbrokenCopyLoads) {
  const std::string dir = CopyFolder("ok");
  EXPECT_EQ(Describe(dir).status, STATICLM_OK) << Describe(dir).error;
  EXPECT_EQ(Create(dir).status, STATICLM_OK) << Create(dir).error;
}

TEST(HfFolderErrors, ExtraFilesAreIgnored) {
  const std::string dir = CopyFolder("extra");
  WriteFile(dir + "/README.md", "# a model\n");
  WriteFile(dir + "/pytorch_model.bin", std::string(100, '\x7f'));
  ::mkdir((dir + "/onnx").c_str(), 0755);
  EXPECT_EQ(Create(dir).status, STATICLM_OK) << Create(dir).error;
}

TEST(HfFolderErrors, MissingConfig) {
  const std::string dir = CopyFolder("no_config");
  std::remove((dir + "/config.json").c_str());
  ExpectError(Describe(dir), STATICLM_IO_ERROR, {"config.json"});
}

TEST(HfFolderErrors, MalformedConfig) {
  const std::string dir = CopyFolder("bad_json");
  WriteFile(dir + "/config.json", "{\"model_type\": \"llama\", \"hidden_size\": ");
  ExpectError(Describe(dir), STATICLM_FORMAT_ERROR, {"config.json", "malformed JSON"});
  WriteFile(dir + "/config.json", "[1, 2]");
  ExpectError(Describe(dir), STATICLM_FORMAT_ERROR, {"config.json", "not a JSON object"});
}

TEST(HfFolderErrors, MissingKey) {
  const std::string dir = CopyFolder("missing_key");
  Patch(dir + "/config.json", "\"hidden_size\"", "\"hidden_sizX\"");
  ExpectError(Describe(dir), STATICLM_FORMAT_ERROR, {"config.json", "'hidden_size'", "missing"});
}

TEST(HfFolderErrors, WrongTypeAndRange) {
  const std::string dir = CopyFolder("wrong_type");
  Patch(dir + "/config.json", "\"num_hidden_layers\": 2", "\"num_hidden_layers\": \"\"");
  ExpectError(Describe(dir), STATICLM_FORMAT_ERROR,
              {"config.json", "'num_hidden_layers'", "a string", "integer"});
  Patch(dir + "/config.json", "\"num_hidden_layers\": \"\"", "\"num_hidden_layers\": -1");
  ExpectError(Describe(dir), STATICLM_FORMAT_ERROR, {"config.json", "'num_hidden_layers'", "-1"});
  Patch(dir + "/config.json", "\"num_hidden_layers\": -1", "\"num_hidden_layers\": 3");
  // The config says 3 layers, the weights have 2.
  ExpectError(Create(dir), STATICLM_FORMAT_ERROR, {"blk.2.attn_norm.weight"});
}

TEST(HfFolderErrors, UnknownModelTypeAndUnsupportedSettings) {
  const std::string dir = CopyFolder("model_type");
  Patch(dir + "/config.json", "\"model_type\": \"llama\"", "\"model_type\": \"bloom\"");
  ExpectError(Describe(dir), STATICLM_UNSUPPORTED, {"config.json", "model_type", "bloom"});
  Patch(dir + "/config.json", "\"model_type\": \"bloom\"", "\"model_type\": \"llama\"");
  Patch(dir + "/config.json", "\"attention_bias\": false", "\"attention_bias\": true");
  ExpectError(Describe(dir), STATICLM_UNSUPPORTED, {"config.json", "'attention_bias' = true"});
  Patch(dir + "/config.json", "\"attention_bias\": true", "\"attention_bias\": false");
  Patch(dir + "/config.json", "\"hidden_act\": \"silu\"", "\"hidden_act\": \"gelu\"");
  ExpectError(Describe(dir), STATICLM_UNSUPPORTED, {"config.json", "gelu"});
}

// What `staticlm inspect` prints of `dir` ("" when it fails).
std::string DescribeText(const std::string& dir) {
  static char out[16384];
  char error[512] = {0};
  if (staticlm_describe_model(dir.c_str(), out, sizeof(out), error, sizeof(error)) != STATICLM_OK)
    return "";
  return out;
}

// Partial RoPE (the Phi-3 folder turning 24 of 32 elements, tests/models/hf/phi3_partial): the
// factor at the top of config.json (transformers 4, Phi-4-mini's published file) or in
// rope_parameters (transformers 5); a factor leaving an odd or no width, or above 1, and
// longrope factors that are not one per turned pair, are one-line errors naming the key.
TEST(HfFolderErrors, PartialRotaryFactor) {
  const std::string dir = CopyFolder("partial", "phi3_partial");
  EXPECT_EQ(Create(dir).status, STATICLM_OK) << Create(dir).error;
  const std::string nested = DescribeText(dir);
  EXPECT_NE(nested.find("partial RoPE: the first 24 of each head's 32 elements"), std::string::npos)
      << nested;
  // At the top level instead.
  Patch(dir + "/config.json", "\"partial_rotary_factor\": 0.75", "\"unused_factor_key\": 0.75");
  Patch(dir + "/config.json", "\"model_type\": \"phi3\"",
        "\"model_type\": \"phi3\", \"partial_rotary_factor\": 0.75");
  EXPECT_EQ(Create(dir).status, STATICLM_OK) << Create(dir).error;
  const std::string top = DescribeText(dir);
  EXPECT_NE(top.find("partial RoPE: the first 24 of each head's 32 elements"), std::string::npos)
      << top;
  EXPECT_NE(top.find("phi3.rope.dimension_count                    24"), std::string::npos) << top;
  for (const char* bad : {"0.1", "1.5", "0.0"}) {  // 3 of 32 elements (odd), above 1, none
    Patch(dir + "/config.json", "\"partial_rotary_factor\": 0.75",
          std::string("\"partial_rotary_factor\": ") + bad);
    ExpectError(Describe(dir), STATICLM_FORMAT_ERROR, {"config.json", "'partial_rotary_factor'"});
    Patch(dir + "/config.json", std::string("\"partial_rotary_factor\": ") + bad,
          "\"partial_rotary_factor\": 0.75");
  }
  // Half of each head: 8 pairs, but the config has 12 factors.
  Patch(dir + "/config.json", "\"partial_rotary_factor\": 0.75", "\"partial_rotary_factor\": 0.5");
  ExpectError(Describe(dir), STATICLM_FORMAT_ERROR, {"config.json", "long_factor"});
}

TEST(HfFolderErrors, UntiedWithoutHead) {
  const std::string dir = CopyFolder("untied");
  Patch(dir + "/config.json", "\"tie_word_embeddings\": true", "\"tie_word_embeddings\": 0");
  ExpectError(Describe(dir), STATICLM_FORMAT_ERROR, {"tie_word_embeddings", "a boolean"});
  Patch(dir + "/config.json", "\"tie_word_embeddings\": 0", "\"tie_word_embeddings\": false");
  ExpectError(Describe(dir), STATICLM_FORMAT_ERROR, {"lm_head.weight", "tie_word_embeddings"});
}

TEST(HfFolderErrors, NoWeights) {
  const std::string dir = CopyFolder("no_weights");
  std::remove((dir + "/model.safetensors").c_str());
  ExpectError(Describe(dir), STATICLM_IO_ERROR, {"model.safetensors"});
}

TEST(HfFolderErrors, ShardMissing) {
  const std::string dir = CopyFolder("shard_missing", "llama_sharded");
  ASSERT_EQ(Create(dir).status, STATICLM_OK) << Create(dir).error;
  std::remove((dir + "/model-00002-of-00002.safetensors").c_str());
  ExpectError(Describe(dir), STATICLM_IO_ERROR, {"model-00002-of-00002.safetensors", "missing"});
}

TEST(HfFolderErrors, IndexListingATensorTheShardLacks) {
  const std::string dir = CopyFolder("index_tensor", "llama_sharded");
  Patch(dir + "/model.safetensors.index.json", "\"model.norm.weight\"", "\"model.norx.weight\"");
  ExpectError(Describe(dir), STATICLM_FORMAT_ERROR,
              {"model-0000", "no tensor 'model.norx.weight'", "index.json"});
}

TEST(HfFolderErrors, IndexNamingAFileOutsideTheFolder) {
  const std::string dir = CopyFolder("index_path", "llama_sharded");
  Patch(dir + "/model.safetensors.index.json", "\"model-00002-of-00002.safetensors\"",
        "\"../../../../../../../etc/passwd\"");
  ExpectError(Describe(dir), STATICLM_FORMAT_ERROR,
              {"model.safetensors.index.json", "weight_map", "not a file name"});
  WriteFile(dir + "/model.safetensors.index.json", "{\"weight_map\": 7}");
  ExpectError(Describe(dir), STATICLM_FORMAT_ERROR, {"index.json", "'weight_map'", "an integer"});
}

TEST(HfFolderErrors, TruncatedSafetensors) {
  const std::string dir = CopyFolder("truncated");
  const std::string path = dir + "/model.safetensors";
  std::string bytes = ReadFile(path);
  WriteFile(path, bytes.substr(0, bytes.size() / 2));
  ExpectError(Describe(dir), STATICLM_FORMAT_ERROR, {"model.safetensors", "truncated"});
  WriteFile(path, bytes.substr(0, 5));
  ExpectError(Describe(dir), STATICLM_FORMAT_ERROR, {"model.safetensors", "truncated"});
  WriteFile(path, "");
  ExpectError(Describe(dir), STATICLM_FORMAT_ERROR, {"model.safetensors"});
  WriteFile(path, bytes.substr(0, 300));  // the header itself cut
  ExpectError(Describe(dir), STATICLM_FORMAT_ERROR, {"model.safetensors", "header length"});
}

TEST(HfFolderErrors, HeaderLengthBeyondTheFile) {
  const std::string dir = CopyFolder("header_length");
  const std::string path = dir + "/model.safetensors";
  std::string bytes = ReadFile(path);
  bytes[6] = '\x01';  // the u64 length now ~2^48
  WriteFile(path, bytes);
  ExpectError(Describe(dir), STATICLM_FORMAT_ERROR, {"model.safetensors", "header length"});
}

TEST(HfFolderErrors, MalformedHeader) {
  const std::string dir = CopyFolder("bad_header");
  const std::string path = dir + "/model.safetensors";
  Patch(path, "{\"__metadata__\"", "[\"__metadata__\"");
  ExpectError(Describe(dir), STATICLM_FORMAT_ERROR, {"model.safetensors", "malformed JSON"});
}

TEST(HfFolderErrors, OverlappingTensors) {
  const std::string dir = CopyFolder("overlap");
  Patch(dir + "/model.safetensors", "\"data_offsets\":[98304,98560]",
        "\"data_offsets\":[98048,98304]");
  ExpectError(Describe(dir), STATICLM_FORMAT_ERROR,
              {"model.safetensors", "model.embed_tokens.weight", "overlap"});
}

TEST(HfFolderErrors, SizeNotMatchingShape) {
  const std::string dir = CopyFolder("size");
  Patch(dir + "/model.safetensors", "\"shape\":[384,64]", "\"shape\":[384,65]");
  ExpectError(Describe(dir), STATICLM_FORMAT_ERROR,
              {"model.safetensors", "model.embed_tokens.weight", "shape"});
}

TEST(HfFolderErrors, UnknownDtype) {
  const std::string dir = CopyFolder("dtype");
  Patch(dir + "/model.safetensors", "\"dtype\":\"F32\"", "\"dtype\":\"I64\"");
  ExpectError(Describe(dir), STATICLM_UNSUPPORTED,
              {"model.safetensors", "model.embed_tokens.weight", "'I64'"});
  Patch(dir + "/model.safetensors", "\"dtype\":\"I64\"", "\"dtype\":12345");
  ExpectError(Describe(dir), STATICLM_FORMAT_ERROR, {"model.embed_tokens.weight.dtype", "string"});
}

TEST(HfFolderErrors, UnknownTensor) {
  const std::string dir = CopyFolder("unknown_tensor");
  Patch(dir + "/model.safetensors", "model.layers.0.mlp.down_proj.weight",
        "model.layers.0.mlp.dawn_proj.weight");
  ExpectError(Describe(dir), STATICLM_UNSUPPORTED,
              {"model.safetensors", "model.layers.0.mlp.dawn_proj.weight"});
}

// A plan file is bound to the folder's fingerprint: config.json, every shard's bytes and the
// quantization. Changing any of them makes the plan another model's.
TEST(HfFolderErrors, PlanFilesAreBoundToTheFolder) {
  const std::string dir = CopyFolder("fingerprint", "llama_sharded");
  const std::string plan = dir + "/plan.slp";
  staticlm_limits l;
  staticlm_limits_default(&l);
  l.max_context = 64;
  char error[512] = {0};
  ASSERT_EQ(staticlm_save_plan(dir.c_str(), &l, plan.c_str(), error, sizeof(error)), STATICLM_OK)
      << error;
  auto create = [&](const char* quantize) {
    staticlm_limits with_plan = l;
    with_plan.plan_path = plan.c_str();
    with_plan.quantize = quantize;
    staticlm_context* ctx = nullptr;
    Outcome o{staticlm_create(dir.c_str(), &with_plan, &ctx, error, sizeof(error)), error};
    staticlm_destroy(ctx);
    return o;
  };
  ASSERT_EQ(create(nullptr).status, STATICLM_OK) << error;
  EXPECT_NE(create("q8_0").status, STATICLM_OK);  // another quantization: another model
  // One weight's last byte in the second shard (its header untouched).
  const std::string shard = dir + "/model-00002-of-00002.safetensors";
  std::string bytes = ReadFile(shard);
  bytes.back() = static_cast<char>(bytes.back() ^ 1);
  WriteFile(shard, bytes);
  EXPECT_NE(create(nullptr).status, STATICLM_OK);
  bytes.back() = static_cast<char>(bytes.back() ^ 1);
  WriteFile(shard, bytes);
  ASSERT_EQ(create(nullptr).status, STATICLM_OK) << error;
  Patch(dir + "/config.json", "\"rms_norm_eps\": 1e-05", "\"rms_norm_eps\": 1.0e-5");
  EXPECT_NE(create(nullptr).status, STATICLM_OK);  // the same value, another file
}

}  // namespace
