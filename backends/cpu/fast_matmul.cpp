#include "backends/cpu/fast_matmul.h"

#include "backends/cpu/matmul_impls.h"
#include "backends/cpu/reference_kernels.h"

namespace staticlm::cpu {
namespace {

#if defined(STATICLM_HAVE_X86_MATMUL)
void MatMulAvx2(DType type, const uint8_t* w, int64_t n_out, int64_t n_in, const float* x,
                int64_t rows, float* y) {
  detail::MatMulRangeAvx2(type, w, n_out, n_in, x, rows, y, 0, n_out);
}

void MatMulAvx512(DType type, const uint8_t* w, int64_t n_out, int64_t n_in, const float* x,
                  int64_t rows, float* y) {
  detail::MatMulRangeAvx512(type, w, n_out, n_in, x, rows, y, 0, n_out);
}
#endif

#if defined(STATICLM_HAVE_NEON_MATMUL)
void MatMulNeon(DType type, const uint8_t* w, int64_t n_out, int64_t n_in, const float* x,
                int64_t rows, float* y) {
  detail::MatMulRangeNeon(type, w, n_out, n_in, x, rows, y, 0, n_out);
}
#endif

}  // namespace

bool IsaSupported(MatMulIsa isa, const CpuFeatures& f) {
  switch (isa) {
    case MatMulIsa::kReference:
      return true;
    case MatMulIsa::kAvx2:
      return f.avx2 && f.fma && f.f16c;
    case MatMulIsa::kAvx512:
      return f.avx512f && f.avx512bw && f.avx512vl && f.avx2 && f.fma && f.f16c;
    case MatMulIsa::kNeon:
      return f.neon;
  }
  return false;
}

MatMulFn MatMulFor(MatMulIsa isa) {
  switch (isa) {
    case MatMulIsa::kReference:
      return &ref::MatMul;
#if defined(STATICLM_HAVE_X86_MATMUL)
    case MatMulIsa::kAvx2:
      return &MatMulAvx2;
    case MatMulIsa::kAvx512:
      return &MatMulAvx512;
#endif
#if defined(STATICLM_HAVE_NEON_MATMUL)
    case MatMulIsa::kNeon:
      return &MatMulNeon;
#endif
    default:
      return nullptr;
  }
}

MatMulRangeFn MatMulRangeFor(MatMulIsa isa) {
  switch (isa) {
    case MatMulIsa::kReference:
      return &ref::MatMulColumns;
#if defined(STATICLM_HAVE_X86_MATMUL)
    case MatMulIsa::kAvx2:
      return &detail::MatMulRangeAvx2;
    case MatMulIsa::kAvx512:
      return &detail::MatMulRangeAvx512;
#endif
#if defined(STATICLM_HAVE_NEON_MATMUL)
    case MatMulIsa::kNeon:
      return &detail::MatMulRangeNeon;
#endif
    default:
      return nullptr;
  }
}

MatMulFn SelectMatMul(const CpuFeatures& features, MatMulIsa* chosen) {
  const MatMulIsa preference[] = {MatMulIsa::kAvx512, MatMulIsa::kAvx2, MatMulIsa::kNeon,
                                  MatMulIsa::kReference};
  for (MatMulIsa isa : preference) {
    MatMulFn fn = MatMulFor(isa);
    if (fn != nullptr && IsaSupported(isa, features)) {
      if (chosen != nullptr) *chosen = isa;
      return fn;
    }
  }
  if (chosen != nullptr) *chosen = MatMulIsa::kReference;
  return &ref::MatMul;
}

const char* MatMulIsaName(MatMulIsa isa) {
  switch (isa) {
    case MatMulIsa::kReference:
      return "reference";
    case MatMulIsa::kAvx2:
      return "avx2";
    case MatMulIsa::kAvx512:
      return "avx512";
    case MatMulIsa::kNeon:
      return "neon";
  }
  return "?";
}

}  // namespace staticlm::cpu
