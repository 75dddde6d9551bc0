// Integer-dot matrix products for quantized weights (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, and
// Q6_K with int8 activations): the
// activations are quantized on the fly to int8 or int16 in blocks of 32 (a scale and an integer
// sum per block), each weight block meets its activation block in an exact integer dot
// product, and only the per-block scaling and the sum over blocks are done in f32.
//
// The arithmetic, which every implementation computes bit for bit (the reference,
// ref_matmul_int8.cpp, is the oracle), with Q = 127 for int8 and Q = 32767 for int16:
//  Quantization of a block x[0..31] of an activation row:
//    amax = max |x[i]|;  d = amax / Q;  if d < FLT_MIN (or amax is 0) then d = 0
//    q[i] = clamp(round_to_nearest_even(x[i] · (1 / d)), −Q, Q)   (q = 0 when d = 0)
//    sum  = Σ q[i]  (int32)
//  Output (r, o) = Σ over blocks b, in block order, in f32 starting from +0:
//    acc = acc + ((dw · dx) · float(idot) + m · (dx · float(sum)))   Q4_1, Q5_1, Q4_K
//    acc = acc + (dw · dx) · float(idot)                              Q4_0, Q5_0, Q8_0, Q6_K
//  where dw (and m) are the weight block's f16 scales as f32, dx and sum the activation
//  block's, and idot = Σ wq[i] · q[i] exactly in int32 with wq the block's integer weights
//  (nibble for Q4_1, nibble − 8 for Q4_0, the 5-bit value for Q5_1, that − 16 for Q5_0, the
//  int8 for Q8_0); float(idot) rounds to nearest. A Q4_K super-block is 8 blocks of 32 (its
//  sub-blocks), each with dw = d · sc and m = −(dmin · min) of that sub-block (exact products).
//  A Q6_K super-block (256 values: f16 d and 16 int8 scales, one per 16 values) is 8 blocks of
//  32, each meeting two of its scales, sc_a for elements 0-15 and sc_b for 16-31; dw = d and
//    idot = sc_a · Σ_{i<16} wq[i] · q[i] + sc_b · Σ_{i≥16} wq[i] · q[i]   (wq = q6 − 32)
//  exactly in int32: |wq| ≤ 32, |q| ≤ 127 and |sc| ≤ 128 bound |idot| by
//  2 · 128 · 16 · 32 · 127 = 16,646,144 < 2^24 (so even float(idot) is exact). With int16
//  activations the bound is 2 · 128 · 16 · 32 · 32767 ≈ 4.3 · 10^9 > 2^31: Q6_K products keep
//  f32 activations at 16 bits (IntSupportsType).
//  No operation is fused: every product and sum is rounded separately.
//
// Error against the f32-activation product: quantizing x moves each element by at most dx/2,
// so |y_int − y_f32| ≲ Σ_b (dx_b / 2) · Σ_i |w_i| plus f32 rounding (see the tests). On
// SmolLM2-135M's golden prompts (2026-11-22) the largest logit difference against transformers
// was 1.25 with int8 activations (outside the golden tolerance of 0.1) and 0.006 with int16
// (f32 KV cache; f32 activations: 0.00006), and int16 kept every greedy continuation.
//
// Deterministic like fast_matmul.h: the bits of y[r][o] depend only on row r of x and row o
// of w — not on n_out, rows, the output range or the tile. No heap allocation, threads or I/O
// in the run-phase calls; safe to call concurrently on disjoint outputs.
#pragma once

#include <cstdint>
#include <vector>

#include "contract/dtype.h"
#include "platform/cpu_features.h"
#include "platform/status.h"

namespace staticlm::cpu {

constexpr int64_t kQuantBlock = 32;

// Activation rows quantized per block of 32. A borrowed view (of a QuantizedBuffer's memory).
struct QuantizedActivations {
  const void* q = nullptr;       // (rows, n_in) int8_t (bits 8) or int16_t (bits 16)
  const float* d = nullptr;      // (rows, n_in / 32) block scales: x ≈ d · q
  const int32_t* sum = nullptr;  // (rows, n_in / 32) Σ q over each block
  int64_t rows = 0;
  int64_t n_in = 0;  // a multiple of 32
  int bits = 8;
};

// Quantizes x (rows, n_in), n_in a multiple of 32, into q (rows, n_in) of the implementation's
// integer type, d and sum (rows, n_in / 32). Run phase: no allocation.
using QuantizeFn = void (*)(const float* x, int64_t rows, int64_t n_in, void* q, float* d,
                            int32_t* sum);

// y[r * n_out + o] for every row r of x and o in [o_begin, o_end); w (n_out, x.n_in) of a type
// IntSupportsType(type, x.bits) accepts (any other writes NaN outputs: callers keep f32
// activations for those); x quantized by the same implementation. Run phase: no allocation.
using MatMulIntRangeFn = void (*)(DType type, const uint8_t* w, int64_t n_out,
                                  const QuantizedActivations& x, float* y, int64_t o_begin,
                                  int64_t o_end);

// MatMulIntRangeFn for 8-bit x and weights of `type` (PackedSupportsType: Q8_0, Q4_0, Q4_1, Q5_0,
// Q5_1, Q6_K, Q4_K, Q5_K) packed in the x16 layout (packed_weights.h) instead of the file's;
// o_begin is a multiple of kPackedColumns. The same results, bit for bit.
using MatMulIntPackedRangeFn = void (*)(DType type, const uint8_t* packed, int64_t n_out,
                                        const QuantizedActivations& x, float* y, int64_t o_begin,
                                        int64_t o_end);

// One implementation for one activation width: its quantizer and its product.
struct IntKernels {
  const char* name = nullptr;  // e.g. "avx512vnni int8"; nullptr: none
  int bits = 0;
  QuantizeFn quantize = nullptr;
  MatMulIntRangeFn matmul = nullptr;
  // Products with packed weights (int8 SIMD implementations only; else null).
  MatMulIntPackedRangeFn packed_matmul = nullptr;
};

// kNeonDot: arm64 with the dot-product instructions, int8 only; its file-layout product is the
// reference's (every integer type has a packed layout, so that serves only matrices whose rows
// are not whole packed blocks).
enum class IntIsa { kReference, kAvx2, kAvx512Vnni, kNeonDot };

// The implementation of `isa` for `bits` (8 or 16), or one with null members when this build
// does not contain it. Whether the CPU can run it is the caller's business (IntIsaSupported).
IntKernels IntKernelsFor(IntIsa isa, int bits);
bool IntIsaSupported(IntIsa isa, const CpuFeatures& features);

// The fastest SIMD implementation for `bits` that `features` allow (AVX-512 VNNI, then AVX2;
// on arm64 NEON with dot products, int8 only),
// or one with null members when there is none (the caller then keeps f32 activations). Init
// only.
IntKernels SelectIntKernels(const CpuFeatures& features, int bits);

// Whether the integer path with `bits`-bit activations (8 or 16) computes products with weights
// of `type`. Q6_K only at 8 bits (its int32 bound above), and Q5_K only at 8 bits too: its SIMD
// products read the packed layout alone (packed_weights.h; the file-layout kernels hand it to
// the reference), which int16 has none of. A product with any other weight keeps f32
// activations.
inline bool IntSupportsType(DType type, int bits) {
  if (type == DType::kQ6_K || type == DType::kQ5_K) return bits == 8;
  return type == DType::kQ4_0 || type == DType::kQ4_1 || type == DType::kQ5_0 ||
         type == DType::kQ5_1 || type == DType::kQ8_0 || type == DType::kQ4_K;
}

// Owns the quantized activations of one product at a time, sized at init for the largest
// (rows, n_in) it will hold (16-bit storage, so it serves both widths).
class QuantizedBuffer {
 public:
  // Init only: allocates for up to max_rows rows of up to max_n_in (a multiple of 32) values.
  Status Init(int64_t max_rows, int64_t max_n_in);
  // Run phase: quantizes x (rows, n_in) with `kernels` and returns the view, or a view with
  // q == nullptr when (rows, n_in) exceeds what Init sized or n_in is not a multiple of 32.
  // No allocation.
  QuantizedActivations Quantize(const IntKernels& kernels, const float* x, int64_t rows,
                                int64_t n_in);
  // Bytes allocated by Init (for memory reports).
  uint64_t bytes() const { return 2 * q_.size() + 4 * d_.size() + 4 * sum_.size(); }

 private:
  int64_t max_rows_ = 0, max_n_in_ = 0;
  std::vector<int16_t> q_;
  std::vector<float> d_;
  std::vector<int32_t> sum_;
};

namespace ref {

// The oracle, plain loops (ref_matmul_int8.cpp). q is int8_t* / int16_t*.
void QuantizeInt8(const float* x, int64_t rows, int64_t n_in, void* q, float* d, int32_t* sum);
void QuantizeInt16(const float* x, int64_t rows, int64_t n_in, void* q, float* d, int32_t* sum);
void MatMulIntRange(DType type, const uint8_t* w, int64_t n_out, const QuantizedActivations& x,
                    float* y, int64_t o_begin, int64_t o_end);

}  // namespace ref

namespace detail {
#if defined(__x86_64__)
#define STATICLM_HAVE_X86_INT_MATMUL 1
// matmul_int8_avx512vnni.cpp; only on CPUs with avx512f+bw+vl+vnni and f16c.
void QuantizeInt8Avx512(const float* x, int64_t rows, int64_t n_in, void* q, float* d,
                        int32_t* sum);
void QuantizeInt16Avx512(const float* x, int64_t rows, int64_t n_in, void* q, float* d,
                         int32_t* sum);
void MatMulIntRangeAvx512Vnni(DType type, const uint8_t* w, int64_t n_out,
                              const QuantizedActivations& x, float* y, int64_t o_begin,
                              int64_t o_end);
// matmul_packed_avx512vnni.cpp, on the same CPUs.
void MatMulInt8PackedRangeAvx512Vnni(DType type, const uint8_t* packed, int64_t n_out,
                                     const QuantizedActivations& x, float* y, int64_t o_begin,
                                     int64_t o_end);
// matmul_int8_avx2.cpp; only on CPUs with avx2, fma and f16c.
void QuantizeInt8Avx2(const float* x, int64_t rows, int64_t n_in, void* q, float* d, int32_t* sum);
void QuantizeInt16Avx2(const float* x, int64_t rows, int64_t n_in, void* q, float* d, int32_t* sum);
void MatMulIntRangeAvx2(DType type, const uint8_t* w, int64_t n_out, const QuantizedActivations& x,
                        float* y, int64_t o_begin, int64_t o_end);
// matmul_packed_avx2.cpp, on the same CPUs.
void MatMulInt8PackedRangeAvx2(DType type, const uint8_t* packed, int64_t n_out,
                               const QuantizedActivations& x, float* y, int64_t o_begin,
                               int64_t o_end);
#endif
#if defined(__aarch64__)
#define STATICLM_HAVE_ARM_INT_MATMUL 1
// matmul_packed_neon_dotprod.cpp; only on CPUs with the dot-product instructions (asimddp).
void MatMulInt8PackedRangeNeonDot(DType type, const uint8_t* packed, int64_t n_out,
                                  const QuantizedActivations& x, float* y, int64_t o_begin,
                                  int64_t o_end);
#endif
}  // namespace detail

}  // namespace staticlm::cpu
