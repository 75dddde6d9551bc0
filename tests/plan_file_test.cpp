// Plan files: saved plans load without building anything and run identically; every bad file
// (another model, another format version or backend, a changed byte, a truncation, a crafted
// record with a valid checksum) is a clear error, never a crash.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/plan/decoder_plan_builder.h"
#include "staticlm/staticlm.h"
#include "tests/support/context_helpers.h"
#include "tests/support/gguf_writer.h"
#include "tests/support/temp_path.h"

namespace {

using Context = staticlm::test::ContextPtr;

std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void WriteAll(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

// FNV-1a 64, as the format documents for the payload checksum (bytes 24..31 of the header).
void FixChecksum(std::vector<uint8_t>* file) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 64; i < file->size(); ++i) h = (h ^ (*file)[i]) * 0x100000001b3ull;
  std::memcpy(file->data() + 24, &h, 8);
}

class PlanFileTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(staticlm::test::TempPath(""));
    staticlm::test::TinyLlamaOptions options;
    options.weight_type = staticlm::DType::kQ4_1;
    options.embedding_type = staticlm::DType::kQ8_0;
    ASSERT_TRUE(staticlm::test::WriteTinyLlama(Model().c_str(), options).ok());
    options.seed = 2;  // same shapes, other weights: another model
    ASSERT_TRUE(staticlm::test::WriteTinyLlama(OtherModel().c_str(), options).ok());
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string Model() { return *dir_ + "plan_tiny.gguf"; }
  static std::string OtherModel() { return *dir_ + "plan_tiny_other.gguf"; }
  static std::string PlanPath(const char* name) { return *dir_ + name; }

  static staticlm_limits Limits(const char* plan = nullptr) {
    staticlm_limits l;
    staticlm_limits_default(&l);
    l.max_context = 96;
    l.prefill_chunk = 12;
    l.plan_path = plan;
    return l;
  }

  static std::string SavePlan(const char* name) {
    std::string path = PlanPath(name);
    staticlm_limits l = Limits();
    char error[256];
    EXPECT_EQ(staticlm_save_plan(Model().c_str(), &l, path.c_str(), error, sizeof(error)),
              STATICLM_OK)
        << error;
    return path;
  }

  // Creates a context from `plan`; returns the status and the message.
  static staticlm_status CreateWith(const std::string& plan, std::string* message,
                                    const std::string& model = Model()) {
    staticlm_limits l = Limits(plan.c_str());
    staticlm_context* ctx = nullptr;
    char error[256] = {0};
    staticlm_status s = staticlm_create(model.c_str(), &l, &ctx, error, sizeof(error));
    staticlm_destroy(ctx);
    *message = error;
    return s;
  }

  static std::string* dir_;
};
std::string* PlanFileTest::dir_ = nullptr;

std::vector<float> PrefillLogits(staticlm_context* ctx) {
  std::vector<int32_t> prompt;
  for (int i = 0; i < 30; ++i) prompt.push_back(17 + i * 7);
  EXPECT_EQ(staticlm_prefill(ctx, prompt.data(), prompt.size()), STATICLM_OK);
  EXPECT_EQ(staticlm_decode(ctx, 42), STATICLM_OK);
  staticlm_model_info info;
  staticlm_get_model_info(ctx, &info);
  const float* l = staticlm_logits(ctx);
  return std::vector<float>(l, l + info.vocab_size);
}

TEST_F(PlanFileTest, LoadedPlanRunsIdenticallyAndBuildsNothing) {
  std::string plan = SavePlan("good.plan");
  staticlm_limits built_limits = Limits();
  staticlm_context* raw = nullptr;
  char error[256];
  ASSERT_EQ(staticlm_create(Model().c_str(), &built_limits, &raw, error, sizeof(error)),
            STATICLM_OK);
  Context built(raw);

  uint64_t builds_before = staticlm::PlanBuildCount();
  staticlm_limits loaded_limits = Limits(plan.c_str());
  loaded_limits.max_context = 5;  // ignored: the plan's limits apply
  ASSERT_EQ(staticlm_create(Model().c_str(), &loaded_limits, &raw, error, sizeof(error)),
            STATICLM_OK)
      << error;
  Context loaded(raw);
  EXPECT_EQ(staticlm::PlanBuildCount(), builds_before) << "loading a plan built a graph";

  staticlm_memory a, b;
  staticlm_get_memory(built.get(), &a);
  staticlm_get_memory(loaded.get(), &b);
  EXPECT_EQ(std::memcmp(&a, &b, sizeof(a)), 0);
  EXPECT_EQ(PrefillLogits(built.get()), PrefillLogits(loaded.get()));
}

TEST_F(PlanFileTest, PlanForAnotherModelIsRejected) {
  std::string plan = SavePlan("other.plan");
  std::string message;
  EXPECT_EQ(CreateWith(plan, &message, OtherModel()), STATICLM_INVALID_ARGUMENT);
  EXPECT_NE(message.find("another model"), std::string::npos) << message;
}

TEST_F(PlanFileTest, OtherFormatVersionIsRejected) {
  auto bytes = ReadAll(SavePlan("version.plan"));
  bytes[8] = 1;  // u32 format version after the 8-byte magic: the previous version
  std::string path = PlanPath("version1.plan");
  WriteAll(path, bytes);
  std::string message;
  EXPECT_EQ(CreateWith(path, &message), STATICLM_UNSUPPORTED);
  EXPECT_NE(message.find("format version 1"), std::string::npos) << message;
}

TEST_F(PlanFileTest, OtherBackendIsRejected) {
  auto bytes = ReadAll(SavePlan("backend.plan"));
  std::memcpy(bytes.data() + 64, "vulkan\0", 7);  // the payload starts with the backend name
  FixChecksum(&bytes);
  std::string path = PlanPath("backend2.plan");
  WriteAll(path, bytes);
  std::string message;
  EXPECT_EQ(CreateWith(path, &message), STATICLM_UNSUPPORTED);
  EXPECT_NE(message.find("backend 'vulkan'"), std::string::npos) << message;
}

TEST_F(PlanFileTest, ChangedByteIsRejected) {
  auto bytes = ReadAll(SavePlan("flip.plan"));
  std::mt19937 rng(5);
  for (int i = 0; i < 50; ++i) {
    auto changed = bytes;
    size_t at = 64 + rng() % (bytes.size() - 64);
    changed[at] ^= uint8_t(1u << (rng() % 8));
    std::string path = PlanPath("flipped.plan");
    WriteAll(path, changed);
    std::string message;
    EXPECT_NE(CreateWith(path, &message), STATICLM_OK) << "flip at " << at;
    EXPECT_NE(message.find("checksum"), std::string::npos) << message;
  }
}

TEST_F(PlanFileTest, TruncatedFileIsRejected) {
  auto bytes = ReadAll(SavePlan("cut.plan"));
  for (size_t keep : {size_t(0), size_t(7), size_t(63), size_t(64), size_t(100), bytes.size() / 2,
                      bytes.size() - 1}) {
    std::string path = PlanPath("truncated.plan");
    WriteAll(path, std::vector<uint8_t>(bytes.begin(), bytes.begin() + long(keep)));
    std::string message;
    EXPECT_NE(CreateWith(path, &message), STATICLM_OK) << keep;
    EXPECT_FALSE(message.empty());
  }
  std::string message;
  EXPECT_EQ(CreateWith(PlanPath("does_not_exist.plan"), &message), STATICLM_IO_ERROR);
}

// A crafted file: records changed and the checksum recomputed. Whatever the change, creating a
// context either fails with a message or yields a context whose plan passed validation (and
// then must run without touching memory outside its buffers: ASan watches in that build).
TEST_F(PlanFileTest, CraftedRecordsWithValidChecksumNeverCrash) {
  auto bytes = ReadAll(SavePlan("crafted.plan"));
  std::mt19937 rng(11);
  int rejected = 0;
  for (int i = 0; i < 400; ++i) {
    auto changed = bytes;
    for (int k = 0; k < 1 + int(rng() % 3); ++k) {
      size_t at = 64 + rng() % (bytes.size() - 64);
      changed[at] = uint8_t(rng() % 4 == 0 ? 0xff : rng());
    }
    FixChecksum(&changed);
    std::string path = PlanPath("crafted_mut.plan");
    WriteAll(path, changed);
    staticlm_limits l = Limits(path.c_str());
    staticlm_context* ctx = nullptr;
    char error[256] = {0};
    if (staticlm_create(Model().c_str(), &l, &ctx, error, sizeof(error)) != STATICLM_OK) {
      EXPECT_NE(error[0], '\0');
      ++rejected;
      continue;
    }
    int32_t tokens[3] = {5, 6, 7};
    (void)staticlm_prefill(ctx, tokens, 3);
    (void)staticlm_decode(ctx, 8);
    staticlm_destroy(ctx);
  }
  std::printf("%d of 400 crafted plan files rejected\n", rejected);
  EXPECT_GT(rejected, 0);
}

TEST_F(PlanFileTest, ReportHasTheJsonKeysAndArenaWithinTarget) {
  staticlm_limits l = Limits();
  std::vector<char> out(1 << 16);
  size_t needed = 0;
  char error[256];
  ASSERT_EQ(staticlm_plan_report(Model().c_str(), &l, 1, out.data(), out.size(), &needed, error,
                                 sizeof(error)),
            STATICLM_OK);
  std::string json(out.data());
  for (const char* key : {"\"decode\"", "\"prefill\"", "\"arena_bytes\"", "\"lower_bound_bytes\"",
                          "\"naive_bytes\"", "\"bytes_read_per_step\"", "\"ops\""}) {
    EXPECT_NE(json.find(key), std::string::npos) << key << " in " << json;
  }
  // A report larger than the buffer says how much it needs.
  char small[16];
  ASSERT_EQ(staticlm_plan_report(Model().c_str(), &l, 0, small, sizeof(small), &needed, error,
                                 sizeof(error)),
            STATICLM_OK);
  EXPECT_GT(needed, sizeof(small));
  EXPECT_EQ(std::strlen(small), sizeof(small) - 1);
}

// The cache policy fields travel in the file: a loaded plan runs a ring cache (past the
// context), sinks, a per-layer pattern and quantized caches exactly as a built one does.
TEST_F(PlanFileTest, CachePoliciesRoundTrip) {
  struct Mode {
    staticlm_kv_type kv;
    int32_t window, sinks, global_every;
  };
  for (Mode m : {Mode{STATICLM_KV_F16, 32, 0, 0}, Mode{STATICLM_KV_Q8, 32, 4, 0},
                 Mode{STATICLM_KV_Q4, 32, 0, 0}, Mode{STATICLM_KV_F32, 32, 0, 2}}) {
    staticlm_limits l = Limits();
    l.kv_type = m.kv;
    l.window = m.window;
    l.sinks = m.sinks;
    l.global_every = m.global_every;
    std::string path = PlanPath("policy.plan");
    char error[256];
    ASSERT_EQ(staticlm_save_plan(Model().c_str(), &l, path.c_str(), error, sizeof(error)),
              STATICLM_OK)
        << error;
    staticlm_context* raw = nullptr;
    ASSERT_EQ(staticlm_create(Model().c_str(), &l, &raw, error, sizeof(error)), STATICLM_OK)
        << error;
    Context built(raw);
    staticlm_limits loaded_limits = Limits(path.c_str());  // static f16 apart from the file
    ASSERT_EQ(staticlm_create(Model().c_str(), &loaded_limits, &raw, error, sizeof(error)),
              STATICLM_OK)
        << error;
    Context loaded(raw);
    staticlm_memory a, b;
    staticlm_get_memory(built.get(), &a);
    staticlm_get_memory(loaded.get(), &b);
    EXPECT_EQ(a.kv_cache_bytes, b.kv_cache_bytes);
    // Three prefills of 30 and a decode: position 91, past the window (and, with every layer
    // windowed, on through a second one to 182, past the context of 96).
    const int rounds = m.global_every > 0 ? 1 : 2;
    for (int i = 0; i < rounds; ++i) {
      PrefillLogits(built.get());
      PrefillLogits(loaded.get());
      PrefillLogits(built.get());
      PrefillLogits(loaded.get());
      EXPECT_EQ(PrefillLogits(built.get()), PrefillLogits(loaded.get())) << m.kv << " " << m.sinks;
    }
  }
}

}  // namespace
