// Every family's Hugging Face folder (tests/models/families/<family>/hf/, made with the F16
// GGUF beside it by tests/reference/make_family_models.py) read as a model description and
// compared with what llama.cpp's converter wrote for the same folder: the architecture, every
// hyperparameter key the converter wrote (same value), every tensor name and shape, and the
// values of the tensors the converter computes from the config (Llama 3's rope_freqs, Phi-3's
// longrope factors). This checks the folder reader for each family whether or not the engine
// runs that family yet. Skips when the family models are not in the tree.
#include <sys/stat.h>

#include <cmath>
#include <cstring>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "runtime/gguf/gguf_file.h"
#include "runtime/hf/hf_folder.h"

namespace {

using staticlm::gguf::GgufFile;
using staticlm::gguf::KeyValue;
using staticlm::gguf::TensorInfo;
using staticlm::gguf::ValueType;

const std::string kFamilies = STATICLM_FAMILY_MODELS_DIR;

// Hyperparameters every family's converter output has, which the folder must give too.
const char* const kRequiredKeys[] = {"block_count",          "context_length",
                                     "embedding_length",     "feed_forward_length",
                                     "attention.head_count", "attention.head_count_kv",
                                     "rope.freq_base",       "attention.layer_norm_rms_epsilon"};

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// The key's value as a double (numbers) or -1 for other types.
double Number(const GgufFile& f, std::string_view key) {
  float v = 0;
  uint64_t u = 0;
  if (f.GetU64(key, &u).ok()) return static_cast<double>(u);
  if (f.GetF32(key, &v).ok()) return v;
  return -1.0;
}

void CompareMetadata(const GgufFile& folder, const GgufFile& gguf, const std::string& arch) {
  std::string_view folder_arch;
  ASSERT_TRUE(folder.GetString("general.architecture", &folder_arch).ok());
  EXPECT_EQ(folder_arch, arch);
  for (const char* k : kRequiredKeys) {
    EXPECT_NE(folder.FindKey(arch + "." + k), nullptr) << arch << "." << k;
  }
  for (const KeyValue& kv : gguf.keys()) {
    if (kv.key.substr(0, arch.size() + 1) != arch + "." || kv.type == ValueType::kString ||
        kv.type == ValueType::kArray) {
      continue;
    }
    const double want = Number(gguf, kv.key);
    if (folder.FindKey(kv.key) == nullptr) {
      // The converter writes a window of 0 for "none" (Phi-3); the folder leaves it out.
      EXPECT_TRUE(want == 0.0) << "the folder lacks " << kv.key << " = " << want;
      continue;
    }
    EXPECT_NEAR(Number(folder, kv.key), want, 1e-6 * std::fabs(want)) << kv.key;
  }
}

void CompareTensors(const GgufFile& folder, const GgufFile& gguf) {
  EXPECT_EQ(folder.tensors().size(), gguf.tensors().size());
  for (const TensorInfo& want : gguf.tensors()) {
    const TensorInfo* got = folder.FindTensor(want.name);
    ASSERT_NE(got, nullptr) << "the folder lacks " << want.name;
    EXPECT_EQ(got->n_dims, want.n_dims) << want.name;
    for (int d = 0; d < 4; ++d) EXPECT_EQ(got->ne[d], want.ne[d]) << want.name << " dim " << d;
    const bool computed = want.name.substr(0, 5) == "rope_";
    if (!computed) continue;
    ASSERT_EQ(got->type, staticlm::DType::kF32);
    ASSERT_EQ(want.type, staticlm::DType::kF32);
    for (int64_t i = 0; i < want.ne[0]; ++i) {
      float a = 0, b = 0;
      std::memcpy(&a, got->data + 4 * i, 4);
      std::memcpy(&b, want.data + 4 * i, 4);
      EXPECT_NEAR(a, b, 1e-6f * std::fabs(b)) << want.name << "[" << i << "]";
    }
  }
}

void CheckFolder(const std::string& dir, const std::string& gguf_path, const std::string& arch) {
  if (!Exists(dir + "/config.json")) GTEST_SKIP() << "no " << dir;
  staticlm::hf::HfFolder holder;
  GgufFile folder, gguf;
  staticlm::Status s = holder.Open(dir.c_str(), nullptr, &folder);
  ASSERT_TRUE(s.ok()) << s.message();
  s = gguf.Open(gguf_path.c_str());
  ASSERT_TRUE(s.ok()) << s.message();
  CompareMetadata(folder, gguf, arch);
  CompareTensors(folder, gguf);
}

void CheckFamily(const std::string& family, const std::string& arch) {
  const std::string dir = kFamilies + "/" + family;
  CheckFolder(dir + "/hf", dir + "/" + family + "-f16.gguf", arch);
}

TEST(HfFamilyFolders, Gemma3MatchesTheConverter) {
  const std::string dir = STATICLM_HF_MODELS_DIR;
  CheckFolder(dir + "/gemma3_bf16", dir + "/gemma3_f16.gguf", "gemma3");
}

TEST(HfFamilyFolders, Llama3MatchesTheConverter) {
  CheckFamily("llama", "llama");
}

TEST(HfFamilyFolders, MistralMatchesTheConverter) {
  CheckFamily("mistral", "llama");
}

TEST(HfFamilyFolders, Qwen2MatchesTheConverter) {
  CheckFamily("qwen2", "qwen2");
}

TEST(HfFamilyFolders, Qwen3MatchesTheConverter) {
  CheckFamily("qwen3", "qwen3");
}

TEST(HfFamilyFolders, Phi3MatchesTheConverter) {
  CheckFamily("phi3", "phi3");
}

}  // namespace
