#include "backends/plan.h"

namespace staticlm {

const char* BufferName(BufferId id) {
  switch (id) {
    case BufferId::kWeights:
      return "weights";
    case BufferId::kKvCache:
      return "kv_cache";
    case BufferId::kArena:
      return "arena";
    case BufferId::kIo:
      return "io";
  }
  return "?";
}

const char* OpKindName(OpKind kind) {
  switch (kind) {
    case OpKind::kEmbed:
      return "embed";
    case OpKind::kRmsNorm:
      return "rms_norm";
    case OpKind::kMatMul:
      return "matmul";
    case OpKind::kRope:
      return "rope";
    case OpKind::kKvStore:
      return "kv_store";
    case OpKind::kAttention:
      return "attention";
    case OpKind::kAdd:
      return "add";
    case OpKind::kSiluMul:
      return "silu_mul";
    case OpKind::kTakeLast:
      return "take_last";
  }
  return "?";
}

MatMulLayout GetMatMulLayout(const OpParams& p) {
  MatMulLayout l;
  l.n_weights = p.n_weights;
  l.inputs = 1 + p.n_weights;
  l.outputs = p.n_weights;
  l.norm_weight_input = p.norm_input ? l.inputs++ : -1;
  l.normed_output = p.norm_input ? l.outputs++ : -1;
  l.acc_output = p.accumulate ? l.outputs++ : -1;
  return l;
}

}  // namespace staticlm
