#include "platform/cpu_features.h"

#include <cstddef>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#elif defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace staticlm {
namespace {

#if defined(__x86_64__) || defined(__i386__)

struct CpuidRegs {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

CpuidRegs Cpuid(unsigned leaf, unsigned subleaf) {
  CpuidRegs r;
  if (!__get_cpuid_count(leaf, subleaf, &r.eax, &r.ebx, &r.ecx, &r.edx)) return CpuidRegs{};
  return r;
}

// XCR0: which register states the OS saves on a context switch. Read with the raw opcode
// so this file needs no target attribute (xgetbv is legal whenever OSXSAVE is set).
unsigned long long ReadXcr0() {
  unsigned eax = 0, edx = 0;
  __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<unsigned long long>(edx) << 32) | eax;
}

bool Bit(unsigned reg, int bit) {
  return (reg >> bit) & 1u;
}

CpuFeatures DetectX86() {
  CpuFeatures f;
  unsigned max_leaf = __get_cpuid_max(0, nullptr);
  if (max_leaf < 1) return f;
  CpuidRegs leaf1 = Cpuid(1, 0);
  if (!Bit(leaf1.ecx, 27) || !Bit(leaf1.ecx, 28)) return f;  // no OSXSAVE or no AVX
  unsigned long long xcr0 = ReadXcr0();
  const unsigned long long kYmmState = 0x6;   // SSE (bit 1) + AVX upper halves (bit 2)
  const unsigned long long kZmmState = 0xe0;  // opmask (5), ZMM0-15 upper (6), ZMM16-31 (7)
  bool ymm_saved = (xcr0 & kYmmState) == kYmmState;
  bool zmm_saved = ymm_saved && (xcr0 & kZmmState) == kZmmState;
  if (!ymm_saved) return f;
  f.fma = Bit(leaf1.ecx, 12);
  f.f16c = Bit(leaf1.ecx, 29);
  if (max_leaf < 7) return f;
  CpuidRegs leaf7 = Cpuid(7, 0);
  f.avx2 = Bit(leaf7.ebx, 5);
#if defined(STATICLM_AVX512_EMULATED)
  // The AVX-512 kernels of this build run on SIMDe's AVX2 code (arch/x86/avx512_emulated.h):
  // any CPU with AVX2, FMA and F16C runs them, so its tests do too.
  f.avx512f = f.avx512bw = f.avx512vl = f.avx512vnni = f.avx2 && f.fma && f.f16c;
  return f;
#endif
  if (!zmm_saved) return f;
  f.avx512f = Bit(leaf7.ebx, 16);
  f.avx512bw = f.avx512f && Bit(leaf7.ebx, 30);
  f.avx512vl = f.avx512f && Bit(leaf7.ebx, 31);
  f.avx512vnni = f.avx512f && Bit(leaf7.ecx, 11);
  return f;
}

#endif

void Append(char* buffer, size_t size, size_t* used, const char* word) {
  size_t len = std::strlen(word);
  size_t space = *used == 0 ? 0 : 1;
  if (*used + space + len + 1 > size) return;
  if (space) buffer[(*used)++] = ' ';
  std::memcpy(buffer + *used, word, len);
  *used += len;
  buffer[*used] = '\0';
}

}  // namespace

CpuFeatures DetectCpuFeatures() {
#if defined(__x86_64__) || defined(__i386__)
  return DetectX86();
#elif defined(__aarch64__)
  CpuFeatures f;
  f.neon = true;
  f.dotprod = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;  // the kernel says what it saves
  return f;
#else
  return CpuFeatures{};
#endif
}

const char* DescribeCpuFeatures(const CpuFeatures& features) {
  static thread_local char buffer[96];
  size_t used = 0;
  buffer[0] = '\0';
  const struct {
    bool on;
    const char* name;
  } flags[] = {
      {features.avx2, "avx2"},
      {features.fma, "fma"},
      {features.f16c, "f16c"},
      {features.avx512f, "avx512f"},
      {features.avx512bw, "avx512bw"},
      {features.avx512vl, "avx512vl"},
      {features.avx512vnni, "avx512vnni"},
      {features.neon, "neon"},
      {features.dotprod, "dotprod"},
  };
  for (const auto& flag : flags) {
    if (flag.on) Append(buffer, sizeof(buffer), &used, flag.name);
  }
  return used == 0 ? "none" : buffer;
}

}  // namespace staticlm
