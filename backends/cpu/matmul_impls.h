// Internal to the fast matmul: the per-ISA entry points behind fast_matmul.h. Each has the
// MatMulRangeFn contract and must only be called on a CPU that supports its ISA.
#pragma once

#include <cstdint>

#include "contract/dtype.h"

namespace staticlm::cpu::detail {

#if defined(__x86_64__)
#define STATICLM_HAVE_X86_MATMUL 1
void MatMulRangeAvx2(DType type, const uint8_t* w, int64_t n_out, int64_t n_in, const float* x,
                     int64_t rows, float* y, int64_t o_begin, int64_t o_end);
void MatMulRangeAvx512(DType type, const uint8_t* w, int64_t n_out, int64_t n_in, const float* x,
                       int64_t rows, float* y, int64_t o_begin, int64_t o_end);
#endif

#if defined(__aarch64__)
#define STATICLM_HAVE_NEON_MATMUL 1
void MatMulRangeNeon(DType type, const uint8_t* w, int64_t n_out, int64_t n_in, const float* x,
                     int64_t rows, float* y, int64_t o_begin, int64_t o_end);
#endif

}  // namespace staticlm::cpu::detail
