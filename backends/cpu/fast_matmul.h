// Fast CPU matrix multiplication, one implementation per instruction set, chosen once at init
// from the CPU's features. Same contract as ref::MatMul, which stays the oracle.
//
// Guarantees of every implementation (they let a thread pool split the work freely):
//  - f32 activations and f32 accumulation; weights decode to exactly the values the reference
//    decodes; only the order of the additions differs from the reference (each lane of a
//    vector sums every 8th or 16th product, then the lanes are added pairwise), so a result
//    is within about (n_in + n_in/8 + 5) · 2⁻²⁴ · Σ|w·x| of the reference's.
//  - Real matrix-matrix kernels for rows > 1: a tile of up to 4 weight rows × 4 activation
//    rows (8 × 1 for a single row) decodes each weight block once for all its rows, and
//    every weight byte is read from memory once per call.
//  - Deterministic: the bits of y[r][o] depend only on row r of x, row o of w and the ISA —
//    not on n_out, on `rows`, on the output range, or on where r falls in a tile.
//  - No heap allocation (about 1 KiB of stack), no threads, no I/O; safe to call
//    concurrently on disjoint outputs.
//  - n_out ≥ 1 and rows ≥ 1 of any size. n_in is a multiple of the block: 32 for
//    Q8_0/Q5_0/Q5_1/Q4_0/Q4_1, 256 for Q4_K/Q5_K/Q6_K, anything ≥ 1 for F32/F16/BF16. Pointers
//    need no particular alignment.
//  - The Q5 types and the K-quants run on tiles like the others: a K-quant super-block is
//    decoded as 8 sub-blocks of 32.
#pragma once

#include <cstdint>

#include "contract/dtype.h"
#include "platform/cpu_features.h"

namespace staticlm::cpu {

// y (rows, n_out) = x (rows, n_in) · wᵀ, w (n_out, n_in) of `type` (any IsWeightMatrixDType).
// Run phase: does not allocate.
using MatMulFn = void (*)(DType type, const uint8_t* w, int64_t n_out, int64_t n_in, const float* x,
                          int64_t rows, float* y);

// The same product restricted to outputs [o_begin, o_end) of every row: writes
// y[r * n_out + o] for those o only, w and y keeping their full shapes. This is the unit a
// thread pool hands out when rows > 1 (y's rows are strided by n_out). Results are bitwise
// those of the full call. Run phase: does not allocate.
using MatMulRangeFn = void (*)(DType type, const uint8_t* w, int64_t n_out, int64_t n_in,
                               const float* x, int64_t rows, float* y, int64_t o_begin,
                               int64_t o_end);

enum class MatMulIsa { kReference, kAvx2, kAvx512, kNeon };

// The fastest implementation `features` allows; stores its ISA in *chosen when not null.
// AVX-512 needs avx512f+bw+vl and f16c; AVX2 needs avx2+fma+f16c; NEON (arm64) needs neon.
// Init only.
MatMulFn SelectMatMul(const CpuFeatures& features, MatMulIsa* chosen);

// A specific implementation (for tests and benchmarks), or nullptr when this build does not
// contain it (the x86 ones on arm64 and the NEON one on x86). Whether the CPU can run it is the
// caller's business: see IsaSupported.
MatMulFn MatMulFor(MatMulIsa isa);
MatMulRangeFn MatMulRangeFor(MatMulIsa isa);

// Whether `features` allow running `isa` (kReference: always).
bool IsaSupported(MatMulIsa isa, const CpuFeatures& features);

const char* MatMulIsaName(MatMulIsa isa);

}  // namespace staticlm::cpu
