// Which plan ops another op's launch does, so that EnqueueOp enqueues nothing for them: fewer
// kernels in a decode step's chain, each of which costs its launch and its wait (a Gemma 3 layer
// had 17 ops). Decided from the plan alone, at capture; the joined kernel computes exactly what
// the separate ones did, in the same order, so the results are bit for bit the same.
#include "backends/cuda/kernels/common.cuh"

namespace staticlm::cuda {
namespace {

bool Apart(const TensorRegion& a, const TensorRegion& b) {
  return a.buffer != b.buffer || a.offset + a.bytes() <= b.offset ||
         b.offset + b.bytes() <= a.offset;
}

bool SameRows(const Plan& plan, const Op& a, const Op& b) {
  return plan.tensors[a.outputs[0]].shape[0] == plan.tensors[b.outputs[0]].shape[0] &&
         a.params.rows_from_step == b.params.rows_from_step;
}

// Whether rope ops a and b turn their rows alike (same rows, positions, frequencies) on
// tensors that do not overlap, so that one launch can do both.
bool SameRotation(const Plan& plan, const Op& a, const Op& b) {
  const OpParams &p = a.params, &q = b.params;
  return a.kind == OpKind::kRope && b.kind == OpKind::kRope && SameRows(plan, a, b) &&
         Apart(plan.tensors[a.outputs[0]], plan.tensors[b.outputs[0]]) &&
         p.head_dim == q.head_dim && p.rope_base == q.rope_base && p.rope_scale == q.rope_scale &&
         p.rope_halves == q.rope_halves && p.rope_dims == q.rope_dims && a.n_inputs == b.n_inputs &&
         (a.n_inputs == 0 || a.inputs[0] == b.inputs[0]);
}

// Whether rms_norm ops a and b normalise per head (norm_group) alike — same rows, group and
// eps — with neither reading or writing what the other writes: a layer's q norm, then its k
// norm (Gemma 3, Qwen 3).
bool SameHeadNorm(const Plan& plan, const Op& a, const Op& b) {
  if (a.kind != OpKind::kRmsNorm || b.kind != OpKind::kRmsNorm) return false;
  const TensorRegion &ya = plan.tensors[a.outputs[0]], &yb = plan.tensors[b.outputs[0]];
  return a.params.norm_group > 0 && a.params.norm_group == b.params.norm_group &&
         a.params.eps == b.params.eps && SameRows(plan, a, b) && Apart(ya, yb) &&
         Apart(ya, plan.tensors[b.inputs[0]]) && Apart(yb, plan.tensors[a.inputs[0]]);
}

// Whether kAdd `add` adds the output of rms_norm `norm` (whole rows) into a tensor apart from
// the norm's input and output: residual += norm(x), Gemma 3's post-attention and post-FFN norms.
bool AddsNorm(const Plan& plan, const Op& norm, const Op& add) {
  if (norm.kind != OpKind::kRmsNorm || add.kind != OpKind::kAdd) return false;
  const TensorRegion& y = plan.tensors[norm.outputs[0]];
  const TensorRegion& sum = plan.tensors[add.outputs[0]];
  const bool whole_rows = norm.params.norm_group == 0 || norm.params.norm_group == y.shape[1];
  return whole_rows && add.inputs[0] == norm.outputs[0] && sum.shape[1] == y.shape[1] &&
         SameRows(plan, norm, add) && Apart(sum, y) && Apart(sum, plan.tensors[norm.inputs[0]]);
}

// A product of one weight with no fusion.
bool IsPlainProduct(const Op& op) {
  const OpParams& p = op.params;
  return op.kind == OpKind::kMatMul && GetMatMulLayout(p).n_weights == 1 && !p.norm_input &&
         !p.silu_mul && !p.accumulate;
}

// In a run of ops each alike to the one before it (alike(prev, op)), pairs are taken from the
// start: whether `op` is the second of a pair (an odd count of alike ops before it).
template <typename Alike>
bool SecondOfPair(const Plan& plan, const Op& op, Alike alike) {
  int alike_before = 0;
  for (const Op* o = &op; Neighbour(plan, *o, -1) != nullptr; o = Neighbour(plan, *o, -1)) {
    if (!alike(plan, *Neighbour(plan, *o, -1), *o)) break;
    ++alike_before;
  }
  return alike_before % 2 == 1;
}

}  // namespace

const Op* Neighbour(const Plan& plan, const Op& op, int direction) {
  const Op* first = plan.ops.data();
  const Op* last = first + plan.ops.size();
  if (&op < first || &op >= last) return nullptr;  // not one of the plan's own ops
  const Op* n = &op + direction;
  return n >= first && n < last ? n : nullptr;
}

bool RopeJoinsPrevious(const Plan& plan, const Op& op) {
  return op.kind == OpKind::kRope && SecondOfPair(plan, op, SameRotation);
}

bool HeadNormJoinsPrevious(const Plan& plan, const Op& op) {
  return op.kind == OpKind::kRmsNorm && SecondOfPair(plan, op, SameHeadNorm);
}

bool AddJoinsPreviousNorm(const Plan& plan, const Op& op) {
  const Op* norm = Neighbour(plan, op, -1);
  return norm != nullptr && AddsNorm(plan, *norm, op) && !HeadNormJoinsPrevious(plan, *norm);
}

const Op* GegluUpOf(const Plan& plan, const Op& gate) {
  const Op* up = Neighbour(plan, gate, +1);
  const Op* gelu = up == nullptr ? nullptr : Neighbour(plan, *up, +1);
  if (gelu == nullptr || !IsPlainProduct(gate) || !IsPlainProduct(*up)) return nullptr;
  const TensorRegion &wg = plan.tensors[gate.inputs[1]], &wu = plan.tensors[up->inputs[1]];
  const bool pair = gate.inputs[0] == up->inputs[0] && wg.shape[0] == wu.shape[0] &&
                    wg.shape[1] == wu.shape[1] && SameRows(plan, gate, *up) &&
                    Apart(plan.tensors[gate.outputs[0]], plan.tensors[up->outputs[0]]);
  const bool gelu_of_pair = gelu->kind == OpKind::kGeluMul && gelu->outputs[0] == gate.outputs[0] &&
                            gelu->inputs[0] == up->outputs[0] && SameRows(plan, gate, *gelu);
  return pair && gelu_of_pair ? up : nullptr;
}

bool JoinsPreviousLaunch(const Plan& plan, const Op& op) {
  const Op* before = Neighbour(plan, op, -1);
  const Op* two_before = before == nullptr ? nullptr : Neighbour(plan, *before, -1);
  return RopeJoinsPrevious(plan, op) || HeadNormJoinsPrevious(plan, op) ||
         AddJoinsPreviousNorm(plan, op) || (before != nullptr && GegluUpOf(plan, *before) == &op) ||
         (op.kind == OpKind::kGeluMul && two_before != nullptr &&
          GegluUpOf(plan, *two_before) == before);
}

}  // namespace staticlm::cuda
