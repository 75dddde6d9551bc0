#include "runtime/plan/plan_cost.h"

#include "contract/kv_policy.h"

namespace staticlm {
namespace {

uint64_t RowBytes(const TensorRegion& t) {
  return DTypeBytes(t.dtype, static_cast<uint64_t>(t.elements() / t.shape[0]));
}

uint64_t U(int64_t v) {
  return static_cast<uint64_t>(v);
}

}  // namespace

void StepCost::Add(const StepCost& o) {
  weight_bytes += o.weight_bytes;
  kv_cache_bytes += o.kv_cache_bytes;
  activation_bytes += o.activation_bytes;
  bytes_read += o.bytes_read;
  bytes_written += o.bytes_written;
  flops += o.flops;
}

StepCost EstimateOpCost(const Plan& plan, const Op& op, int32_t n_tokens, int32_t position) {
  StepCost c;
  const TensorRegion& out = plan.tensors[op.outputs[0]];
  const OpParams& p = op.params;
  int64_t rows = p.rows_from_step ? n_tokens : out.shape[0];
  uint64_t out_bytes = U(rows) * RowBytes(out);
  switch (op.kind) {
    case OpKind::kEmbed:
      c.weight_bytes = U(rows) * RowBytes(plan.tensors[op.inputs[0]]);
      c.bytes_read = c.weight_bytes + 4 * U(rows);
      c.bytes_written = out_bytes;
      break;
    case OpKind::kMatMul: {
      MatMulLayout l = GetMatMulLayout(p);
      int64_t k = plan.tensors[op.inputs[1]].shape[1];
      uint64_t x_bytes = U(rows * k) * 4;
      c.bytes_read = x_bytes;
      for (int i = 0; i < l.n_weights; ++i) {
        const TensorRegion& w = plan.tensors[op.inputs[1 + i]];
        uint64_t y_bytes = U(rows * w.shape[0]) * 4;
        c.weight_bytes += w.bytes();
        c.bytes_written += y_bytes;
        c.flops += 2 * U(rows * w.shape[0] * w.shape[1]);
        if (l.acc_output >= 0 || p.silu_mul) c.bytes_read += y_bytes;  // re-read to combine
      }
      if (l.norm_weight_input >= 0) {
        c.weight_bytes += plan.tensors[op.inputs[l.norm_weight_input]].bytes();
        c.bytes_read += x_bytes;  // the normalised copy is read by the products
        c.bytes_written += x_bytes;
        c.flops += 4 * U(rows * k);
      }
      if (l.acc_output >= 0) {
        uint64_t acc_bytes =
            plan.tensors[op.outputs[l.acc_output]].bytes() / U(out.shape[0]) * U(rows);
        c.bytes_read += acc_bytes;
        c.bytes_written += acc_bytes;
      }
      c.bytes_read += c.weight_bytes;
      break;
    }
    case OpKind::kRmsNorm:
      c.weight_bytes = plan.tensors[op.inputs[1]].bytes();
      c.bytes_read = c.weight_bytes + out_bytes;
      c.bytes_written = out_bytes;
      c.flops = 4 * U(rows * out.shape[1]);
      break;
    case OpKind::kKvStore: {
      // A token's keys or values of every KV head, as stored (q8/q4 with their scales).
      uint64_t token = U(p.n_kv_heads) * (DTypeBytes(out.dtype, U(p.head_dim)) +
                                          (p.kv_quant == KvQuant::kNone ? 0 : 8));
      c.kv_cache_bytes = 2 * U(rows) * token;
      c.bytes_read = 2 * U(rows * p.n_kv_heads * p.head_dim) * 4;
      c.bytes_written = c.kv_cache_bytes;
      break;
    }
    case OpKind::kAttention: {
      const TensorRegion& cache = plan.tensors[op.inputs[1]];
      uint64_t token =
          DTypeBytes(cache.dtype, U(p.head_dim)) + (p.kv_quant == KvQuant::kNone ? 0 : 8);
      // Each KV head's keys and values of the positions the last row attends to are read once
      // per step (the query heads of a group, and the rows, share them while they are in
      // cache): up to the position under a static cache, at most the window under a ring.
      uint64_t span = U(Attended(p, position + rows - 1).cache_position + 1);
      if (p.cache_policy != CachePolicy::kStatic) {
        uint64_t rows_span = U(rows - 1) + U(p.window);
        span = rows_span < U(position + rows) ? rows_span : U(position + rows);
      }
      c.kv_cache_bytes = 2 * span * U(p.n_kv_heads) * token;
      uint64_t pairs = 0;
      for (int64_t r = 0; r < rows; ++r) pairs += U(Attended(p, position + r).cache_position + 1);
      c.flops = 4 * pairs * U(p.n_heads * p.head_dim);
      c.bytes_read = c.kv_cache_bytes + out_bytes;
      c.bytes_written = out_bytes;
      break;
    }
    case OpKind::kAdd:
    case OpKind::kSiluMul:
    case OpKind::kGeluMul:
      c.bytes_read = 2 * out_bytes;
      c.bytes_written = out_bytes;
      c.flops = U(rows * out.shape[1]) * (op.kind == OpKind::kAdd ? 1 : 4);
      break;
    case OpKind::kAddBias:
      c.weight_bytes = plan.tensors[op.inputs[0]].bytes();
      c.bytes_read = c.weight_bytes + out_bytes;
      c.bytes_written = out_bytes;
      c.flops = U(rows * out.shape[1]);
      break;
    case OpKind::kRope:
      if (op.n_inputs == 1) c.weight_bytes = plan.tensors[op.inputs[0]].bytes();
      c.bytes_read = c.weight_bytes + out_bytes;
      c.bytes_written = out_bytes;
      c.flops = 6 * U(rows * out.shape[1]) / 2;
      break;
    case OpKind::kTakeLast:
      c.bytes_read = out_bytes;
      c.bytes_written = out_bytes;
      break;
  }
  uint64_t moved = c.bytes_read + c.bytes_written;
  c.activation_bytes = moved - c.weight_bytes - c.kv_cache_bytes;
  return c;
}

StepCost EstimateStepCost(const Plan& plan, int32_t n_tokens, int32_t position) {
  StepCost cost;
  for (const Op& op : plan.ops) cost.Add(EstimateOpCost(plan, op, n_tokens, position));
  return cost;
}

}  // namespace staticlm
