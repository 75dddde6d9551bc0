// The instruction set the CPU backend runs (`--isa`, staticlm_limits.isa): an init-time choice
// of kernel set. Every kernel family — matrix products, attention, element-wise, integer
// products — is selected from the CPU features this choice leaves visible, so asking for AVX2
// on an AVX-512 machine runs the AVX2 kernels throughout, as on an AVX2-only CPU.
#pragma once

#include <cstddef>

#include "backends/backend.h"
#include "platform/cpu_features.h"
#include "platform/status.h"

namespace staticlm::cpu {

enum class CpuIsa {
  kAuto,    // the best this CPU has (AVX-512, else AVX2, else NEON, else scalar)
  kAvx512,  // AVX-512 F+BW+VL (with AVX2, FMA, F16C); VNNI integer products where present
  kAvx2,    // AVX2 + FMA + F16C, AVX-512 left unused
  kNeon,    // arm64 Advanced SIMD
  kScalar,  // the plain reference kernels (the oracle), as with reference_kernels
};

// "auto", "avx512", "avx2", "neon" or "scalar" (and "reference", a plan file's name for the
// scalar kernels); false for anything else. Any phase.
bool ParseCpuIsa(const char* name, CpuIsa* isa);
const char* CpuIsaName(CpuIsa isa);

// Whether a CPU with `features` (and this build) can run `isa`; kAuto and kScalar always.
bool CpuHasIsa(CpuIsa isa, const CpuFeatures& features);

// The ISAs of `features` that CpuHasIsa accepts, best first, e.g. "avx512 avx2 scalar". The
// string lives in a thread-local buffer that the next call on the same thread overwrites.
const char* DescribeCpuIsas(const CpuFeatures& features);

// The features the kernel selectors may use under `isa`: all of them for kAuto and kAvx512,
// those without AVX-512 for kAvx2, NEON only for kNeon, none for kScalar. kUnsupported, naming
// `flag` (e.g. "--isa") and what the CPU has, when the CPU cannot run `isa`. Init only.
Status RestrictFeaturesToIsa(CpuIsa isa, const CpuFeatures& detected, const char* flag,
                             CpuFeatures* usable);

// The ISA `options` ask for — "scalar" with reference_kernels, else options.isa unless it is
// "auto", else a plan file's options.kernels, else "auto" — and who asked ("--isa", "the plan
// file's kernels"). kInvalidArgument for an unknown name. Any phase.
Status RequestedIsa(const BackendOptions& options, CpuIsa* isa, const char** source);

// The features of this CPU that the kernel selectors may use under the ISA `options` ask for
// (RequestedIsa, then RestrictFeaturesToIsa). Init only.
Status UsableCpuFeatures(const BackendOptions& options, CpuFeatures* usable);

// "isa <chosen> (cpu has <DescribeCpuIsas>)", e.g. "isa avx2 (cpu has avx512 avx2 scalar)",
// into out: the choice UsableCpuFeatures gives, for reports; its error when there is none.
// Init only.
Status DescribeIsaChoice(const BackendOptions& options, char* out, size_t capacity);

}  // namespace staticlm::cpu
