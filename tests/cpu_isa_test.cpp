// The --isa choice (backends/cpu/cpu_isa.h): which ISAs a CPU offers, checked against the
// compiler's own detection; what each choice leaves the kernel selectors; and that an ISA the
// CPU lacks is refused at init — through the C API and the command line — with one line naming
// the flag and what the CPU has. (That each offered ISA's kernels agree with the reference
// kernels on a whole model is EngineIsaTest in engine_test.)
#include "backends/cpu/cpu_isa.h"

#include <string>

#include <gtest/gtest.h>

#include "staticlm/staticlm.h"
#include "tests/support/cli_runner.h"
#include "tests/support/gguf_writer.h"
#include "tests/support/temp_path.h"

namespace staticlm::cpu {
namespace {

#if defined(__x86_64__)
// What libgcc says the CPU (and OS) support, independently of cpu_features.cpp.
bool BuiltinHasAvx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx2") &&
         __builtin_cpu_supports("fma");
}

bool BuiltinHasAvx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

TEST(CpuIsaTest, OffersExactlyTheIsasTheCpuHas) {
  const CpuFeatures f = DetectCpuFeatures();
  EXPECT_EQ(CpuHasIsa(CpuIsa::kAvx512, f), BuiltinHasAvx512());
  EXPECT_EQ(CpuHasIsa(CpuIsa::kAvx2, f), BuiltinHasAvx2());
  EXPECT_FALSE(CpuHasIsa(CpuIsa::kNeon, f));
  EXPECT_TRUE(CpuHasIsa(CpuIsa::kScalar, f));
  std::printf("isas: %s\n", DescribeCpuIsas(f));
}
#endif

TEST(CpuIsaTest, NamesRoundTrip) {
  for (CpuIsa isa :
       {CpuIsa::kAuto, CpuIsa::kAvx512, CpuIsa::kAvx2, CpuIsa::kNeon, CpuIsa::kScalar}) {
    CpuIsa parsed = CpuIsa::kAuto;
    ASSERT_TRUE(ParseCpuIsa(CpuIsaName(isa), &parsed)) << CpuIsaName(isa);
    EXPECT_EQ(parsed, isa);
  }
  CpuIsa parsed = CpuIsa::kAuto;
  EXPECT_TRUE(ParseCpuIsa("reference", &parsed));  // a plan file's name for the scalar kernels
  EXPECT_EQ(parsed, CpuIsa::kScalar);
  EXPECT_FALSE(ParseCpuIsa("avx", &parsed));
  EXPECT_FALSE(ParseCpuIsa("", &parsed));
  EXPECT_FALSE(ParseCpuIsa(nullptr, &parsed));
}

CpuFeatures Everything() {
  CpuFeatures f;
  f.avx2 = f.fma = f.f16c = f.avx512f = f.avx512bw = f.avx512vl = f.avx512vnni = true;
  return f;
}

TEST(CpuIsaTest, EachChoiceLeavesOnlyItsFeatures) {
  CpuFeatures usable;
#if defined(__x86_64__)
  ASSERT_TRUE(RestrictFeaturesToIsa(CpuIsa::kAvx2, Everything(), "--isa", &usable).ok());
  EXPECT_TRUE(usable.avx2 && usable.fma && usable.f16c);
  EXPECT_FALSE(usable.avx512f || usable.avx512bw || usable.avx512vl || usable.avx512vnni);
  ASSERT_TRUE(RestrictFeaturesToIsa(CpuIsa::kAvx512, Everything(), "--isa", &usable).ok());
  EXPECT_TRUE(usable.avx512f && usable.avx512vnni && usable.avx2);
  ASSERT_TRUE(RestrictFeaturesToIsa(CpuIsa::kAuto, Everything(), "--isa", &usable).ok());
  EXPECT_TRUE(usable.avx512f && usable.avx512vnni);
#endif
  ASSERT_TRUE(RestrictFeaturesToIsa(CpuIsa::kScalar, Everything(), "--isa", &usable).ok());
  EXPECT_FALSE(usable.avx2 || usable.fma || usable.f16c || usable.avx512f || usable.neon);
}

// The refusal names the flag, the ISA, and what the CPU offers.
TEST(CpuIsaTest, AnIsaTheCpuLacksIsRefused) {
  CpuFeatures avx2_only;
  avx2_only.avx2 = avx2_only.fma = avx2_only.f16c = true;
  CpuFeatures usable;
  Status s = RestrictFeaturesToIsa(CpuIsa::kAvx512, avx2_only, "--isa", &usable);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  const std::string message = s.message();
  EXPECT_NE(message.find("--isa avx512"), std::string::npos) << message;
#if defined(__x86_64__)
  EXPECT_NE(message.find("it has: avx2 scalar"), std::string::npos) << message;
#endif
  EXPECT_FALSE(RestrictFeaturesToIsa(CpuIsa::kAvx2, CpuFeatures{}, "--isa", &usable).ok());
}

#if defined(__x86_64__)
class CpuIsaModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = new std::string(test::TempPath("cpu_isa_tiny.gguf"));
    test::TinyLlamaOptions options;
    options.weight_type = DType::kQ4_1;
    options.context_length = 4096;  // room for the defaults (bench: at least 2048)
    ASSERT_TRUE(test::WriteTinyLlama(path_->c_str(), options).ok());
  }
  static void TearDownTestSuite() { delete path_; }
  static std::string* path_;
};
std::string* CpuIsaModelTest::path_ = nullptr;

TEST_F(CpuIsaModelTest, NeonOnX86IsRefusedAtCreate) {
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.isa = "neon";
  staticlm_context* ctx = nullptr;
  char error[256] = {0};
  EXPECT_EQ(staticlm_create(path_->c_str(), &limits, &ctx, error, sizeof(error)),
            STATICLM_UNSUPPORTED);
  EXPECT_EQ(ctx, nullptr);
  const std::string message = error;
  EXPECT_NE(message.find("--isa neon"), std::string::npos) << message;
  EXPECT_NE(message.find(BuiltinHasAvx2() ? "avx2" : "scalar"), std::string::npos) << message;
  char choice[128];
  EXPECT_EQ(staticlm_cpu_isa(&limits, choice, sizeof(choice), error, sizeof(error)),
            STATICLM_UNSUPPORTED);
}

TEST_F(CpuIsaModelTest, UnknownIsaIsAnInvalidArgument) {
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.isa = "sse2";
  staticlm_context* ctx = nullptr;
  char error[256] = {0};
  EXPECT_EQ(staticlm_create(path_->c_str(), &limits, &ctx, error, sizeof(error)),
            STATICLM_INVALID_ARGUMENT);
  EXPECT_NE(std::string(error).find("--isa sse2"), std::string::npos) << error;
}

TEST_F(CpuIsaModelTest, CommandLineRefusesNeonOnX86InOneLine) {
  test::ExpectCleanFailure("run --model " + *path_ + " --isa neon --max-tokens 1", "--isa neon");
  test::ExpectCleanFailure("bench --model " + *path_ + " --isa neon --gen-tokens 1 --reps 1",
                           "--isa neon");
  test::ExpectCleanFailure("run --model " + *path_ + " --isa sse2", "--isa expects");
}

TEST_F(CpuIsaModelTest, InspectNamesTheChosenIsa) {
  const char* isa = BuiltinHasAvx2() ? "avx2" : "scalar";
  test::CliResult r = test::RunCli("inspect --model " + *path_ + " --isa " + isa);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(std::string("cpu kernels: isa ") + isa + " (cpu has "), std::string::npos)
      << r.output;
}
#endif

}  // namespace
}  // namespace staticlm::cpu
