#include "backends/cpu/cpu_isa.h"

#include <cstdio>
#include <cstring>

#include "backends/cpu/fast_matmul.h"

namespace staticlm::cpu {
namespace {

struct IsaName {
  CpuIsa isa;
  const char* name;
};

// Best first: the order DescribeCpuIsas lists them in.
constexpr IsaName kIsaNames[] = {{CpuIsa::kAvx512, "avx512"},
                                 {CpuIsa::kAvx2, "avx2"},
                                 {CpuIsa::kNeon, "neon"},
                                 {CpuIsa::kScalar, "scalar"},
                                 {CpuIsa::kAuto, "auto"}};

}  // namespace

bool ParseCpuIsa(const char* name, CpuIsa* isa) {
  if (name == nullptr) return false;
  if (std::strcmp(name, "reference") == 0) {  // a plan file's name for the scalar kernels
    *isa = CpuIsa::kScalar;
    return true;
  }
  for (const IsaName& entry : kIsaNames) {
    if (std::strcmp(entry.name, name) == 0) {
      *isa = entry.isa;
      return true;
    }
  }
  return false;
}

const char* CpuIsaName(CpuIsa isa) {
  for (const IsaName& entry : kIsaNames) {
    if (entry.isa == isa) return entry.name;
  }
  return "?";
}

// The SIMD ISAs need both the CPU's instructions and this build's kernels for them.
bool CpuHasIsa(CpuIsa isa, const CpuFeatures& f) {
  switch (isa) {
    case CpuIsa::kAuto:
    case CpuIsa::kScalar:
      return true;
    case CpuIsa::kAvx512:
      return MatMulFor(MatMulIsa::kAvx512) != nullptr && IsaSupported(MatMulIsa::kAvx512, f);
    case CpuIsa::kAvx2:
      return MatMulFor(MatMulIsa::kAvx2) != nullptr && IsaSupported(MatMulIsa::kAvx2, f);
    case CpuIsa::kNeon:
      return MatMulFor(MatMulIsa::kNeon) != nullptr && IsaSupported(MatMulIsa::kNeon, f);
  }
  return false;
}

const char* DescribeCpuIsas(const CpuFeatures& features) {
  static thread_local char buffer[64];
  buffer[0] = '\0';
  for (const IsaName& entry : kIsaNames) {
    if (entry.isa == CpuIsa::kAuto || !CpuHasIsa(entry.isa, features)) continue;
    if (buffer[0] != '\0') std::strncat(buffer, " ", sizeof(buffer) - std::strlen(buffer) - 1);
    std::strncat(buffer, entry.name, sizeof(buffer) - std::strlen(buffer) - 1);
  }
  return buffer;
}

Status RestrictFeaturesToIsa(CpuIsa isa, const CpuFeatures& detected, const char* flag,
                             CpuFeatures* usable) {
  if (!CpuHasIsa(isa, detected)) {
    return Status::Error(StatusCode::kUnsupported,
                         "%s %s: this CPU cannot run it (it has: %s; cpu flags: %s)", flag,
                         CpuIsaName(isa), DescribeCpuIsas(detected), DescribeCpuFeatures(detected));
  }
  *usable = detected;
  switch (isa) {
    case CpuIsa::kAuto:
    case CpuIsa::kAvx512:
      break;
    case CpuIsa::kAvx2:
      usable->avx512f = usable->avx512bw = usable->avx512vl = usable->avx512vnni = false;
      usable->neon = false;
      break;
    case CpuIsa::kNeon:
      *usable = CpuFeatures{};
      usable->neon = true;
      usable->dotprod = detected.dotprod;
      break;
    case CpuIsa::kScalar:
      *usable = CpuFeatures{};
      break;
  }
  return Status::Ok();
}

Status RequestedIsa(const BackendOptions& options, CpuIsa* isa, const char** source) {
  *source = "--isa";
  *isa = CpuIsa::kScalar;
  if (options.reference_kernels) return Status::Ok();
  const char* asked = options.isa[0] != '\0' ? options.isa : "auto";
  if (!ParseCpuIsa(asked, isa)) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "--isa %s: unknown (expected auto, avx512, avx2, neon or scalar)", asked);
  }
  if (*isa != CpuIsa::kAuto || options.kernels[0] == '\0') return Status::Ok();
  *source = "the plan file's kernels";
  if (!ParseCpuIsa(options.kernels, isa)) {
    return Status::Error(StatusCode::kUnsupported, "unknown CPU kernel choice '%s' (plan file)",
                         options.kernels);
  }
  return Status::Ok();
}

Status UsableCpuFeatures(const BackendOptions& options, CpuFeatures* usable) {
  CpuIsa isa = CpuIsa::kAuto;
  const char* source = "";
  STATICLM_RETURN_IF_ERROR(RequestedIsa(options, &isa, &source));
  return RestrictFeaturesToIsa(isa, DetectCpuFeatures(), source, usable);
}

Status DescribeIsaChoice(const BackendOptions& options, char* out, size_t capacity) {
  CpuFeatures usable;
  STATICLM_RETURN_IF_ERROR(UsableCpuFeatures(options, &usable));
  MatMulIsa isa = MatMulIsa::kReference;
  SelectMatMul(usable, &isa);
  std::snprintf(out, capacity, "isa %s (cpu has %s)",
                isa == MatMulIsa::kReference ? CpuIsaName(CpuIsa::kScalar) : MatMulIsaName(isa),
                DescribeCpuIsas(DetectCpuFeatures()));
  return Status::Ok();
}

}  // namespace staticlm::cpu
