// Choosing an integer-activation implementation, and the buffer its quantized activations
// live in.
#include "backends/cpu/matmul_int8.h"

namespace staticlm::cpu {

IntKernels IntKernelsFor(IntIsa isa, int bits) {
  if (bits != 8 && bits != 16) return {};
  const bool wide = bits == 16;
  switch (isa) {
    case IntIsa::kReference:
      return {wide ? "reference int16" : "reference int8", bits,
              wide ? &ref::QuantizeInt16 : &ref::QuantizeInt8, &ref::MatMulIntRange};
#if defined(STATICLM_HAVE_X86_INT_MATMUL)
    case IntIsa::kAvx2:
      return {wide ? "avx2 int16" : "avx2 int8", bits,
              wide ? &detail::QuantizeInt16Avx2 : &detail::QuantizeInt8Avx2,
              &detail::MatMulIntRangeAvx2, wide ? nullptr : &detail::MatMulInt8PackedRangeAvx2};
    case IntIsa::kAvx512Vnni:
      return {wide ? "avx512vnni int16" : "avx512vnni int8", bits,
              wide ? &detail::QuantizeInt16Avx512 : &detail::QuantizeInt8Avx512,
              &detail::MatMulIntRangeAvx512Vnni,
              wide ? nullptr : &detail::MatMulInt8PackedRangeAvx512Vnni};
#endif
#if defined(STATICLM_HAVE_ARM_INT_MATMUL)
    case IntIsa::kNeonDot:
      if (wide) return {};
      return {"neon dotprod int8", bits, &ref::QuantizeInt8, &ref::MatMulIntRange,
              &detail::MatMulInt8PackedRangeNeonDot};
#endif
    default:
      return {};
  }
  return {};
}

bool IntIsaSupported(IntIsa isa, const CpuFeatures& f) {
  switch (isa) {
    case IntIsa::kReference:
      return true;
    case IntIsa::kAvx2:
      return f.avx2 && f.fma && f.f16c;
    case IntIsa::kAvx512Vnni:
      return f.avx512f && f.avx512bw && f.avx512vl && f.avx512vnni && f.avx2 && f.fma && f.f16c;
    case IntIsa::kNeonDot:
      return f.neon && f.dotprod;
  }
  return false;
}

IntKernels SelectIntKernels(const CpuFeatures& features, int bits) {
  for (IntIsa isa : {IntIsa::kAvx512Vnni, IntIsa::kAvx2, IntIsa::kNeonDot}) {
    IntKernels k = IntKernelsFor(isa, bits);
    if (k.matmul != nullptr && IntIsaSupported(isa, features)) return k;
  }
  return {};
}

Status QuantizedBuffer::Init(int64_t max_rows, int64_t max_n_in) {
  if (max_rows < 1 || max_n_in < kQuantBlock || max_n_in % kQuantBlock != 0) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "quantized activations: bad buffer shape (%lld rows of %lld)",
                         static_cast<long long>(max_rows), static_cast<long long>(max_n_in));
  }
  max_rows_ = max_rows;
  max_n_in_ = max_n_in;
  q_.assign(static_cast<size_t>(max_rows * max_n_in), 0);
  d_.assign(static_cast<size_t>(max_rows * max_n_in / kQuantBlock), 0.0f);
  sum_.assign(d_.size(), 0);
  return Status::Ok();
}

QuantizedActivations QuantizedBuffer::Quantize(const IntKernels& kernels, const float* x,
                                               int64_t rows, int64_t n_in) {
  QuantizedActivations v;
  // The buffer holds rows × n_in values in any shape up to its size: every row is n_in long.
  if (kernels.quantize == nullptr || rows < 1 || n_in < kQuantBlock || n_in % kQuantBlock != 0 ||
      n_in > max_n_in_ || rows * n_in > max_rows_ * max_n_in_) {
    return v;
  }
  kernels.quantize(x, rows, n_in, q_.data(), d_.data(), sum_.data());
  v.q = q_.data();
  v.d = d_.data();
  v.sum = sum_.data();
  v.rows = rows;
  v.n_in = n_in;
  v.bits = kernels.bits;
  return v;
}

}  // namespace staticlm::cpu
