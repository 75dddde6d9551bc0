// CPU features that select the fast kernels. Detected once at init; the run phase only reads
// the struct it was given.
#pragma once

namespace staticlm {

// Each flag is true only when the CPU has the instructions AND the OS saves the register
// state they use (YMM for AVX2/FMA/F16C, ZMM and mask registers for AVX-512), so a flag
// that is true is safe to act on.
struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512vnni = false;
  bool neon = false;     // always true on aarch64, where Advanced SIMD is mandatory
  bool dotprod = false;  // aarch64: the Armv8.2 dot products SDOT/UDOT (HWCAP asimddp)
};

// Runs cpuid/xgetbv (x86) or reports the baseline (aarch64). Does not allocate; cheap, but
// meant for init.
CpuFeatures DetectCpuFeatures();

// The flags that are set, space-separated ("avx2 fma f16c avx512f ..."), or "none". The
// string lives in a thread-local buffer that the next call on the same thread overwrites.
// Does not allocate.
const char* DescribeCpuFeatures(const CpuFeatures& features);

}  // namespace staticlm
