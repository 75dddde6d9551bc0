#include "contract/plan.h"

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
    case OpKind::kGeluMul:
      return "gelu_mul";
    case OpKind::kAddBias:
      return "add_bias";
  }
  return "?";
}

const char* CachePolicyName(CachePolicy policy) {
  switch (policy) {
    case CachePolicy::kStatic:
      return "static";
    case CachePolicy::kSlidingWindow:
      return "sliding_window";
    case CachePolicy::kSink:
      return "sink";
  }
  return "?";
}

const char* KvQuantName(KvQuant quant) {
  switch (quant) {
    case KvQuant::kNone:
      return "none";
    case KvQuant::kQ8:
      return "q8";
    case KvQuant::kQ4:
      return "q4";
  }
  return "?";
}

KvLayout GetKvLayout(KvQuant quant) {
  switch (quant) {
    case KvQuant::kNone:
      return {-1, -1, -1, -1, 2};
    case KvQuant::kQ8:
      return {2, -1, 4, -1, 4};
    case KvQuant::kQ4:
      return {2, 4, 4, 6, 6};
  }
  return {-1, -1, -1, -1, 2};
}

int AttentionFactorsInput(const Op& op) {
  // q, the cache tensors (k and v first), scores, then the factors.
  const int factors = 2 + GetKvLayout(op.params.kv_quant).count;
  return op.kind == OpKind::kAttention && op.n_inputs == factors + 1 ? factors : -1;
}

bool PlanPositionsUnbounded(const Plan& plan) {
  bool any = false;
  for (const Op& op : plan.ops) {
    if (op.kind != OpKind::kAttention && op.kind != OpKind::kKvStore) continue;
    if (op.params.cache_policy == CachePolicy::kStatic) return false;
    any = true;
  }
  return any;
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
