#include "runtime/plan/plan_cost.h"

namespace staticlm {
namespace {

uint64_t RowBytes(const TensorRegion& t) {
  return DTypeBytes(t.dtype, static_cast<uint64_t>(t.elements() / t.shape[0]));
}

void AddOpCost(const Plan& plan, const Op& op, int64_t n, int64_t position, StepCost* cost) {
  const TensorRegion& out = plan.tensors[op.outputs[0]];
  int64_t rows = op.params.rows_from_step ? n : out.shape[0];
  uint64_t out_bytes = static_cast<uint64_t>(rows) * RowBytes(out);
  const OpParams& p = op.params;
  switch (op.kind) {
    case OpKind::kEmbed:
      cost->weight_bytes += static_cast<uint64_t>(rows) * RowBytes(plan.tensors[op.inputs[0]]);
      cost->activation_bytes += out_bytes + 4 * static_cast<uint64_t>(rows);
      return;
    case OpKind::kMatMul: {
      const TensorRegion& w = plan.tensors[op.inputs[1]];
      cost->weight_bytes += w.bytes();
      cost->activation_bytes += static_cast<uint64_t>(rows * w.shape[1]) * 4 + out_bytes;
      cost->flops += 2 * static_cast<uint64_t>(rows * w.shape[0] * w.shape[1]);
      return;
    }
    case OpKind::kKvStore: {
      const TensorRegion& cache = plan.tensors[op.outputs[0]];
      uint64_t elem = DTypeBytes(cache.dtype, 1);
      cost->kv_cache_bytes += 2 * static_cast<uint64_t>(rows * p.n_kv_heads * p.head_dim) * elem;
      cost->activation_bytes += 2 * static_cast<uint64_t>(rows * p.n_kv_heads * p.head_dim) * 4;
      return;
    }
    case OpKind::kAttention: {
      const TensorRegion& cache = plan.tensors[op.inputs[1]];
      uint64_t elem = DTypeBytes(cache.dtype, 1);
      // Each KV head's keys and values up to the last position are read once per step (query
      // heads of a group share them while hot); scores are q·k and weights·v per query head.
      uint64_t span = static_cast<uint64_t>(position + rows);
      cost->kv_cache_bytes += 2 * span * static_cast<uint64_t>(p.n_kv_heads * p.head_dim) * elem;
      uint64_t pairs = 0;
      for (int64_t r = 0; r < rows; ++r) pairs += static_cast<uint64_t>(position + r + 1);
      cost->flops += 4 * pairs * static_cast<uint64_t>(p.n_heads * p.head_dim);
      cost->activation_bytes += 2 * out_bytes;
      return;
    }
    default:
      cost->activation_bytes += 2 * out_bytes;
      return;
  }
}

}  // namespace

StepCost EstimateStepCost(const Plan& plan, int32_t n_tokens, int32_t position) {
  StepCost cost;
  for (const Op& op : plan.ops) AddOpCost(plan, op, n_tokens, position, &cost);
  return cost;
}

}  // namespace staticlm
