// CPU feature detection, checked against the compiler's own detection (libgcc's
// __builtin_cpu_supports, which also consults the OS-saved register state).
#include "platform/cpu_features.h"

#include <cstring>
#include <string>

#include <gtest/gtest.h>

namespace staticlm {
namespace {

#if defined(__x86_64__) || defined(__i386__)
TEST(CpuFeaturesTest, AgreesWithCompilerBuiltins) {
  __builtin_cpu_init();
  CpuFeatures f = DetectCpuFeatures();
  EXPECT_EQ(f.avx2, bool(__builtin_cpu_supports("avx2")));
  EXPECT_EQ(f.fma, bool(__builtin_cpu_supports("fma")));
  EXPECT_EQ(f.avx512f, bool(__builtin_cpu_supports("avx512f")));
  EXPECT_EQ(f.avx512bw, bool(__builtin_cpu_supports("avx512bw")));
  EXPECT_EQ(f.avx512vl, bool(__builtin_cpu_supports("avx512vl")));
  EXPECT_EQ(f.avx512vnni, bool(__builtin_cpu_supports("avx512vnni")));
  EXPECT_FALSE(f.neon);
}
#endif

#if defined(__aarch64__)
TEST(CpuFeaturesTest, NeonOnArm64) {
  EXPECT_TRUE(DetectCpuFeatures().neon);
}
#endif

TEST(CpuFeaturesTest, DescriptionListsExactlyTheSetFlags) {
  EXPECT_STREQ(DescribeCpuFeatures(CpuFeatures{}), "none");
  CpuFeatures some{};
  some.avx2 = some.f16c = some.avx512vnni = true;
  EXPECT_STREQ(DescribeCpuFeatures(some), "avx2 f16c avx512vnni");
  CpuFeatures all{true, true, true, true, true, true, true, true};
  EXPECT_STREQ(DescribeCpuFeatures(all), "avx2 fma f16c avx512f avx512bw avx512vl avx512vnni neon");
}

TEST(CpuFeaturesTest, DescriptionOfThisMachineNamesItsFlags) {
  CpuFeatures f = DetectCpuFeatures();
  std::string text = DescribeCpuFeatures(f);
  std::printf("cpu features: %s\n", text.c_str());
  EXPECT_EQ(f.avx2, text.find("avx2") != std::string::npos);
  EXPECT_EQ(f.avx512f, text.find("avx512f") != std::string::npos);
}

}  // namespace
}  // namespace staticlm
