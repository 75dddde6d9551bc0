// Per-step timing of a plan's ops, summed by op kind and weight type: where a step's time goes
// (staticlm_limits.profile_ops, `staticlm bench --op-profile`). Fixed storage indexed by the
// enums, so recording and reading never allocate.
#pragma once

#include <cstddef>
#include <cstdint>

#include "contract/plan.h"

namespace staticlm {

// One kind of op with one weight type, summed since the last Reset.
struct OpProfileRow {
  const char* op = "";      // OpKindName: a static string
  const char* weight = "";  // products: the weight type (DTypeName, static); otherwise ""
  int64_t calls = 0;
  double seconds = 0;       // wall time of the calling thread from an op's start to its end
  double weight_bytes = 0;  // bytes of weight matrices the products read; 0 for other ops
};

class OpProfile {
 public:
  // Run phase: adds one run of `op` of `plan` that took `seconds`.
  void Add(const Plan& plan, const Op& op, double seconds);
  void Reset();
  // Calls visit(const OpProfileRow&) for each kind and weight type that has calls, in op-kind
  // order. Never allocates.
  template <typename Visit>
  void ForEachRow(Visit visit) const {
    for (int kind = 0; kind < kKinds; ++kind) {
      for (int slot = 0; slot < kWeightSlots; ++slot) {
        const Cell& cell = cells_[kind][slot];
        if (cell.calls > 0) visit(MakeRow(kind, slot, cell));
      }
    }
  }

 private:
  static constexpr int kKinds = 16;
  static constexpr int kWeightSlots = 33;  // 0: no weight; 1 + DType for the types below 32
  struct Cell {
    int64_t calls = 0;
    double seconds = 0;
    double weight_bytes = 0;
  };
  static OpProfileRow MakeRow(int kind, int slot, const Cell& cell);
  Cell cells_[kKinds][kWeightSlots];
};

}  // namespace staticlm
