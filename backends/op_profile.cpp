#include "backends/op_profile.h"

#include "contract/dtype.h"

namespace staticlm {
namespace {

// The weight type a row is keyed by: the first weight of a product, the table of an embedding.
int WeightSlot(const Plan& plan, const Op& op, double* weight_bytes) {
  *weight_bytes = 0;
  uint32_t weight = 0;
  if (op.kind == OpKind::kMatMul) {
    const MatMulLayout layout = GetMatMulLayout(op.params);
    for (int i = 0; i < layout.n_weights; ++i) {
      *weight_bytes += static_cast<double>(plan.tensors[op.inputs[1 + i]].bytes());
    }
    weight = op.inputs[1];
  } else if (op.kind == OpKind::kEmbed) {
    weight = op.inputs[0];
  } else {
    return 0;
  }
  const int type = static_cast<int>(plan.tensors[weight].dtype);
  return type < 32 ? 1 + type : 0;
}

}  // namespace

void OpProfile::Add(const Plan& plan, const Op& op, double seconds) {
  const int kind = static_cast<int>(op.kind);
  if (kind >= kKinds) return;
  double weight_bytes = 0;
  Cell& cell = cells_[kind][WeightSlot(plan, op, &weight_bytes)];
  cell.calls += 1;
  cell.seconds += seconds;
  cell.weight_bytes += weight_bytes;
}

void OpProfile::Reset() {
  for (auto& kind : cells_) {
    for (Cell& cell : kind) cell = Cell{};
  }
}

OpProfileRow OpProfile::MakeRow(int kind, int slot, const Cell& cell) {
  OpProfileRow row;
  row.op = OpKindName(static_cast<OpKind>(kind));
  row.weight = slot == 0 ? "" : DTypeName(static_cast<DType>(slot - 1));
  row.calls = cell.calls;
  row.seconds = cell.seconds;
  row.weight_bytes = cell.weight_bytes;
  return row;
}

}  // namespace staticlm
