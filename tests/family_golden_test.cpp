// The model families of issue 14 against transformers, on the tiny random-weight models that
// tests/reference/make_family_models.py commits in tests/models/families/<family>/: qwen2 (q/k/v
// biases), qwen3 (q/k norms), llama (Llama 3.2: rope_type llama3 scaling, tied embeddings), phi3
// (fused qkv and gate_up, longrope factors) and mistral (a sliding window of 16). Each family's
// F16 and Q8_0 GGUF, made by llama.cpp's convert_hf_to_gguf.py, runs the golden prompts
// (transformers' ids) through the C API; staticlm's greedy tokens must equal transformers' run on
// the same weights as that file holds them (tests/golden/families/<family>.txt, variants f16 and
// q8_0: the script checks every tensor of each GGUF against them), f32 arithmetic and cache on
// both sides, so only summation order differs. Each file runs on the CPU, on Vulkan and on CUDA. A
// divergence is accepted only at a near tie (transformers' top-2 gap below kLogitTolerance), where
// that case's comparison stops.
//
// A family whose architecture staticlm does not run yet (FindArchitecture returns null) is
// skipped with that reason, as is a file staticlm refuses as unsupported (STATICLM_UNSUPPORTED,
// e.g. a RoPE scaling it does not implement, or no Vulkan or CUDA device here) -- with its message.
// Anything else it loads must give transformers' tokens.
#include <ostream>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/gguf/gguf_file.h"
#include "runtime/model/architecture.h"
#include "staticlm/staticlm.h"
#include "tests/support/context_helpers.h"
#include "tests/support/family_golden.h"
#include "tests/support/greedy_check.h"

namespace {

constexpr const char* kFamilyDir = STATICLM_GOLDEN_DIR "/../models/families";
constexpr float kLogitTolerance = 0.1f;

using Context = staticlm::test::ContextPtr;

struct FamilyFile {
  const char* family;
  const char* variant;  // the GGUF's type, also the golden variant
  // The model has a sliding window (its metadata's), which staticlm applies only when asked:
  // limits.window = STATICLM_WINDOW_FROM_MODEL.
  bool model_window;
};

// How GoogleTest (and ctest's test list) names a parameter.
void PrintTo(const FamilyFile& f, std::ostream* os) {
  *os << f.family << "-" << f.variant;
}

// A file and the backend that runs it ("cpu", "vulkan" or "cuda").
using Param = std::tuple<FamilyFile, std::string>;

std::string ModelPath(const FamilyFile& f) {
  return std::string(kFamilyDir) + "/" + f.family + "/" + f.family + "-" + f.variant + ".gguf";
}

// The file's general.architecture; the test fails when it cannot be read.
std::string ArchitectureOf(const std::string& path) {
  staticlm::gguf::GgufFile file;
  const staticlm::Status opened = file.Open(path.c_str());
  EXPECT_TRUE(opened.ok()) << opened.message();
  std::string_view arch;
  if (opened.ok()) {
    const staticlm::Status read = file.GetString("general.architecture", &arch);
    EXPECT_TRUE(read.ok()) << read.message();
  }
  return std::string(arch);
}

// Opens the parameter's GGUF and golden file in SetUp; skips there when staticlm does not run
// the family (see the top of this file).
class FamilyGoldenTest : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    const FamilyFile& f = std::get<0>(GetParam());
    const std::string path = ModelPath(f);
    const std::string arch = ArchitectureOf(path);
    ASSERT_FALSE(arch.empty()) << path;
    if (staticlm::FindArchitecture(arch) == nullptr) {
      GTEST_SKIP() << f.family << ": FindArchitecture(\"" << arch
                   << "\") is null: staticlm does not run this architecture yet";
    }
    std::string error;
    ASSERT_TRUE(staticlm::test::ReadFamilyGolden(
        std::string(STATICLM_GOLDEN_DIR "/families/") + f.family + ".txt", &golden_, &error))
        << error;
    staticlm_limits limits;
    staticlm_limits_default(&limits);
    limits.max_context = 128;  // within phi3's original context, as the goldens are
    limits.prefill_chunk = 64;
    limits.kv_type = STATICLM_KV_F32;
    limits.activation_bits = 0;
    limits.backend = std::get<1>(GetParam()).c_str();
    if (f.model_window) limits.window = STATICLM_WINDOW_FROM_MODEL;
    staticlm_context* raw = nullptr;
    char message[256] = {0};
    const staticlm_status created =
        staticlm_create(path.c_str(), &limits, &raw, message, sizeof(message));
    // Also where this build or machine has no Vulkan or CUDA device, or no shader for a weight
    // type, or where the build lacks the backend (the sanitizer build has no CUDA).
    const bool unknown_backend =
        std::string_view(message).find("unknown backend") != std::string_view::npos;
    if (created == STATICLM_UNSUPPORTED || unknown_backend) {
      GTEST_SKIP() << f.family << " on " << limits.backend << ": staticlm refuses " << path << ": "
                   << message;
    }
    ASSERT_EQ(created, STATICLM_OK) << message;
    ctx_.reset(raw);
  }

  // staticlm_tokenize's ids (BOS first where the file says so) for `text`.
  std::vector<int32_t> Tokenize(const std::string& text) {
    std::vector<int32_t> ids(text.size() + 2);
    size_t n = 0;
    EXPECT_EQ(
        staticlm_tokenize(ctx_.get(), text.data(), text.size(), 1, ids.data(), ids.size(), &n),
        STATICLM_OK)
        << staticlm_last_error(ctx_.get());
    ids.resize(n);
    return ids;
  }

  staticlm::test::FamilyGolden golden_;
  Context ctx_;
};

TEST_P(FamilyGoldenTest, GreedyContinuationsMatchTransformers) {
  const char* variant = std::get<0>(GetParam()).variant;
  const std::vector<staticlm::test::GreedyCase>& cases = golden_.greedy[variant];
  ASSERT_EQ(cases.size(), 5u) << "golden cases of variant " << variant;
  staticlm::test::CheckGreedyCases(ctx_.get(), cases, kLogitTolerance);
}

// The tokenizer the GGUF describes against transformers' on the folder's tokenizer: the tricky
// texts (special-token text parsed as special) and the plain prompts, for every family: Llama 3's
// and Qwen2's byte-level BPE (Qwen2's NFC from the pre-tokenizer's name), and the SentencePiece
// files of phi3 and mistral (a "▁" before every stretch, even after a leading space or a special
// token; "<unk>" parsed; Phi-3's rstrip chat tokens).
TEST_P(FamilyGoldenTest, TokenizationMatchesTransformers) {
  ASSERT_FALSE(golden_.tokenize.empty());
  for (const staticlm::test::FamilyTokenizeCase& c : golden_.tokenize) {
    EXPECT_EQ(Tokenize(c.text), c.ids_default) << "text \"" << c.text << "\"";
  }
  for (const staticlm::test::GreedyCase& c : golden_.greedy["hf"]) {
    if (!c.chat) {
      EXPECT_EQ(Tokenize(c.text), c.prompt_ids) << c.name;
    }
  }
}

constexpr FamilyFile kFiles[] = {
    {"qwen2", "f16", false},   {"qwen2", "q8_0", false}, {"qwen3", "f16", false},
    {"qwen3", "q8_0", false},  {"llama", "f16", false},  {"llama", "q8_0", false},
    {"phi3", "f16", false},    {"phi3", "q8_0", false},  {"mistral", "f16", true},
    {"mistral", "q8_0", true},
};

INSTANTIATE_TEST_SUITE_P(Families, FamilyGoldenTest,
                         ::testing::Combine(::testing::ValuesIn(kFiles),
                                            ::testing::Values(std::string("cpu"),
                                                              std::string("vulkan"),
                                                              std::string("cuda"))),
                         [](const ::testing::TestParamInfo<Param>& info) {
                           const FamilyFile& f = std::get<0>(info.param);
                           return std::string(f.family) + "_" + f.variant + "_" +
                                  std::get<1>(info.param);
                         });

}  // namespace
