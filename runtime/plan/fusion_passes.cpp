#include "runtime/plan/fusion_passes.h"

#include <cstdio>
#include <cstring>
#include <vector>

namespace staticlm {
namespace {

constexpr struct {
  const char* name;
  uint32_t pass;
} kPasses[] = {
    {"norm", kFuseNorm}, {"qkv", kFuseQkv}, {"gate_up", kFuseGateUp}, {"residual", kFuseResidual}};

bool IsPlainMatMul(const Op& op) {
  const OpParams& p = op.params;
  return op.kind == OpKind::kMatMul && p.n_weights == 1 && !p.norm_input && !p.silu_mul &&
         !p.accumulate;
}

bool SameInput(const Op& a, const Op& b) {
  return a.inputs[0] == b.inputs[0] && a.params.rows_from_step == b.params.rows_from_step;
}

// Appends `b`'s weight and output to `a`, a matmul with the same input.
void AddProduct(Op* a, const Op& b) {
  a->inputs[a->n_inputs++] = b.inputs[1];
  a->outputs[a->n_outputs++] = b.outputs[0];
  a->params.n_weights++;
}

// Whether any op from `from` on reads or writes tensor `t`.
bool UsedFrom(const std::vector<Op>& ops, size_t from, uint32_t t) {
  for (size_t i = from; i < ops.size(); ++i) {
    for (int j = 0; j < ops[i].n_inputs; ++j)
      if (ops[i].inputs[j] == t) return true;
    for (int j = 0; j < ops[i].n_outputs; ++j)
      if (ops[i].outputs[j] == t) return true;
  }
  return false;
}

// Rewrites `ops` with `fuse(ops, i, &out)`: it returns how many ops starting at i it consumed
// (pushing their replacement onto out), or 0 to keep ops[i] as it is.
template <typename Fn>
void Rewrite(std::vector<Op>* ops, Fn fuse) {
  std::vector<Op> out;
  for (size_t i = 0; i < ops->size();) {
    size_t consumed = fuse(*ops, i, &out);
    if (consumed == 0) {
      out.push_back((*ops)[i]);
      consumed = 1;
    }
    i += consumed;
  }
  *ops = std::move(out);
}

size_t FuseQkv(const std::vector<Op>& ops, size_t i, std::vector<Op>* out) {
  if (i + 2 >= ops.size()) return 0;
  const Op &q = ops[i], &k = ops[i + 1], &v = ops[i + 2];
  if (!IsPlainMatMul(q) || !IsPlainMatMul(k) || !IsPlainMatMul(v) || !SameInput(q, k) ||
      !SameInput(q, v)) {
    return 0;
  }
  Op fused = q;
  AddProduct(&fused, k);
  AddProduct(&fused, v);
  out->push_back(fused);
  return 3;
}

size_t FuseGateUp(const std::vector<Op>& ops, size_t i, std::vector<Op>* out) {
  if (i + 2 >= ops.size()) return 0;
  const Op &gate = ops[i], &up = ops[i + 1], &silu = ops[i + 2];
  if (!IsPlainMatMul(gate) || !IsPlainMatMul(up) || !SameInput(gate, up) ||
      silu.kind != OpKind::kSiluMul || silu.outputs[0] != gate.outputs[0] ||
      silu.inputs[0] != up.outputs[0]) {
    return 0;
  }
  Op fused = gate;
  AddProduct(&fused, up);
  fused.params.silu_mul = true;
  out->push_back(fused);
  return 3;
}

size_t FuseResidual(const std::vector<Op>& ops, size_t i, std::vector<Op>* out) {
  if (i + 1 >= ops.size()) return 0;
  const Op &mm = ops[i], &add = ops[i + 1];
  if (!IsPlainMatMul(mm) || add.kind != OpKind::kAdd || add.inputs[0] != mm.outputs[0] ||
      mm.params.rows_from_step != add.params.rows_from_step) {
    return 0;
  }
  Op fused = mm;
  fused.params.accumulate = true;
  fused.outputs[fused.n_outputs++] = add.outputs[0];
  out->push_back(fused);
  return 2;
}

// The norm's output becomes the fused op's scratch; it must not be read after that op.
size_t FuseNorm(const std::vector<Op>& ops, size_t i, std::vector<Op>* out) {
  if (i + 1 >= ops.size()) return 0;
  const Op &norm = ops[i], &mm = ops[i + 1];
  if (norm.kind != OpKind::kRmsNorm || norm.params.norm_group != 0 || mm.kind != OpKind::kMatMul ||
      mm.params.norm_input || mm.params.accumulate || mm.inputs[0] != norm.outputs[0] ||
      norm.params.rows_from_step != mm.params.rows_from_step ||
      UsedFrom(ops, i + 2, norm.outputs[0])) {
    return 0;
  }
  Op fused = mm;
  fused.inputs[0] = norm.inputs[0];
  fused.inputs[fused.n_inputs++] = norm.inputs[1];
  fused.outputs[fused.n_outputs++] = norm.outputs[0];
  fused.params.norm_input = true;
  fused.params.eps = norm.params.eps;
  out->push_back(fused);
  return 2;
}

}  // namespace

uint32_t FusionPassByName(const char* name) {
  if (std::strcmp(name, "all") == 0) return kAllFusions;
  for (const auto& p : kPasses) {
    if (std::strcmp(p.name, name) == 0) return p.pass;
  }
  return 0;
}

void DescribeFusions(uint32_t mask, char* out, size_t capacity) {
  size_t used = 0;
  if (capacity > 0) out[0] = '\0';
  for (const auto& p : kPasses) {
    if ((mask & p.pass) == 0 || used >= capacity) continue;
    int n = std::snprintf(out + used, capacity - used, "%s%s", used ? "," : "", p.name);
    if (n > 0) used += static_cast<size_t>(n);
  }
  if (used == 0 && capacity > 0) std::snprintf(out, capacity, "none");
}

void ApplyFusionPasses(uint32_t enabled, Plan* plan) {
  if (enabled & kFuseQkv) Rewrite(&plan->ops, FuseQkv);
  if (enabled & kFuseGateUp) Rewrite(&plan->ops, FuseGateUp);
  if (enabled & kFuseResidual) Rewrite(&plan->ops, FuseResidual);
  if (enabled & kFuseNorm) Rewrite(&plan->ops, FuseNorm);
}

}  // namespace staticlm
