// EnqueueOp and OpSupported: the switch from a plan op to its op family's kernels (one .cu
// file per family; common.cuh declares their enqueue functions).
#include "backends/cuda/kernels/block_decode.h"
#include "backends/cuda/kernels/common.cuh"

namespace staticlm::cuda {
namespace {

bool Refuse(const char* message, const char** why) {
  *why = message;
  return false;
}

bool Overlap(const TensorRegion& a, const TensorRegion& b) {
  return a.buffer == b.buffer && a.offset < b.offset + b.bytes() && b.offset < a.offset + a.bytes();
}

bool MatMulSupported(const Plan& plan, const Op& op, const char** why) {
  const OpParams& p = op.params;
  const MatMulLayout layout = GetMatMulLayout(p);
  if (layout.n_weights < 1 || layout.n_weights > 3) {
    return Refuse("CUDA: kMatMul takes 1 to 3 weights", why);
  }
  for (int i = 0; i < layout.n_weights; ++i) {
    if (!DecodableWeightType(plan.tensors[op.inputs[1 + i]].dtype)) {
      return Refuse("CUDA: no kernel for kMatMul with weights of this type", why);
    }
  }
  if (p.silu_mul && (layout.n_weights != 2 ||
                     plan.tensors[op.inputs[1]].shape[0] != plan.tensors[op.inputs[2]].shape[0])) {
    return Refuse("CUDA: kMatMul's silu_mul needs two weights of one shape", why);
  }
  // The blocks of one launch add into acc while others still read x: they must not share memory.
  if (layout.acc_output >= 0 &&
      Overlap(plan.tensors[op.outputs[layout.acc_output]], plan.tensors[op.inputs[0]])) {
    return Refuse("CUDA: kMatMul's accumulated output overlaps its input", why);
  }
  return true;
}

bool CacheSupported(const Plan& plan, const Op& op, uint32_t k_tensor, const char** why) {
  const OpParams& p = op.params;
  const DType t = plan.tensors[k_tensor].dtype;
  if (p.head_dim > 256) return Refuse("CUDA: attention takes head sizes up to 256", why);
  const bool plain = p.kv_quant == KvQuant::kNone && (t == DType::kF16 || t == DType::kF32);
  if (!plain && p.kv_quant == KvQuant::kNone) {
    return Refuse("CUDA: no kernel for a KV cache of this type", why);
  }
  return true;
}

}  // namespace

bool OpSupported(const Plan& plan, const Op& op, const char** why) {
  switch (op.kind) {
    case OpKind::kEmbed:
      if (!DecodableWeightType(plan.tensors[op.inputs[0]].dtype)) {
        return Refuse("CUDA: no kernel for kEmbed with a table of this type", why);
      }
      return true;
    case OpKind::kMatMul:
      return MatMulSupported(plan, op, why);
    case OpKind::kKvStore:
      return CacheSupported(plan, op, op.outputs[0], why);
    case OpKind::kAttention:
      return CacheSupported(plan, op, op.inputs[1], why);
    case OpKind::kRmsNorm:
    case OpKind::kRope:
    case OpKind::kAdd:
    case OpKind::kSiluMul:
    case OpKind::kTakeLast:
    case OpKind::kGeluMul:
    case OpKind::kAddBias:
      return true;
  }
  return Refuse("CUDA: unknown op kind", why);
}

cudaError_t EnqueueOp(const Plan& plan, const Op& op, const DeviceBuffers& buffers,
                      const StepValues* step, cudaStream_t stream) {
  EnqueueFn fn = nullptr;
  switch (op.kind) {
    case OpKind::kEmbed:
      fn = EnqueueEmbed;
      break;
    case OpKind::kRmsNorm:
      fn = EnqueueRmsNorm;
      break;
    case OpKind::kMatMul:
      fn = EnqueueMatMul;
      break;
    case OpKind::kRope:
      fn = EnqueueRope;
      break;
    case OpKind::kKvStore:
      fn = EnqueueKvStore;
      break;
    case OpKind::kAttention:
      fn = EnqueueAttention;
      break;
    case OpKind::kAdd:
    case OpKind::kSiluMul:
    case OpKind::kTakeLast:
    case OpKind::kGeluMul:
    case OpKind::kAddBias:
      fn = EnqueueElementwise;
      break;
  }
  return fn == nullptr ? cudaErrorNotSupported : fn(plan, op, buffers, step, stream);
}

cudaError_t PreloadKernels() {
  using PreloadFn = cudaError_t (*)();
  const PreloadFn families[] = {
      PreloadEmbedNormKernels,        PreloadElementwiseKernels, PreloadRopeKernels,
      PreloadMatMulKernels,           PreloadKvStoreKernels,     PreloadAttentionKernels,
      PreloadPrefillAttentionKernels, PreloadSampleKernels};
  for (PreloadFn preload : families) {
    const cudaError_t e = preload();
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

}  // namespace staticlm::cuda
