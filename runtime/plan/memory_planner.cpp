#include "runtime/plan/memory_planner.h"

#include <algorithm>
#include <vector>

namespace staticlm {
namespace {

struct Lifetime {
  uint32_t tensor;
  int64_t first_op = -1;
  int64_t last_op = -1;
  uint64_t bytes = 0;
  uint64_t offset = 0;
};

uint64_t AlignUp(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) & ~(alignment - 1);
}

void Touch(std::vector<int64_t>* first, std::vector<int64_t>* last, uint32_t tensor, int64_t op) {
  if ((*first)[tensor] < 0) (*first)[tensor] = op;
  (*last)[tensor] = op;
}

std::vector<Lifetime> ArenaLifetimes(const Plan& plan, uint64_t alignment) {
  std::vector<int64_t> first(plan.tensors.size(), -1);
  std::vector<int64_t> last(plan.tensors.size(), -1);
  for (size_t i = 0; i < plan.ops.size(); ++i) {
    const Op& op = plan.ops[i];
    for (int j = 0; j < op.n_inputs; ++j) Touch(&first, &last, op.inputs[j], int64_t(i));
    for (int j = 0; j < op.n_outputs; ++j) Touch(&first, &last, op.outputs[j], int64_t(i));
  }
  std::vector<Lifetime> lifetimes;
  for (uint32_t t = 0; t < plan.tensors.size(); ++t) {
    if (plan.tensors[t].buffer != BufferId::kArena || first[t] < 0) continue;
    lifetimes.push_back({t, first[t], last[t], AlignUp(plan.tensors[t].bytes(), alignment), 0});
  }
  return lifetimes;
}

bool Overlaps(const Lifetime& a, const Lifetime& b) {
  return a.first_op <= b.last_op && b.first_op <= a.last_op;
}

// Lowest offset where `t` fits between the already placed tensors that are live with it.
uint64_t LowestFreeOffset(const Lifetime& t, const std::vector<const Lifetime*>& placed,
                          uint64_t alignment) {
  std::vector<const Lifetime*> conflicts;
  for (const Lifetime* p : placed) {
    if (Overlaps(*p, t)) conflicts.push_back(p);
  }
  std::sort(conflicts.begin(), conflicts.end(),
            [](const Lifetime* a, const Lifetime* b) { return a->offset < b->offset; });
  uint64_t candidate = 0;
  for (const Lifetime* c : conflicts) {
    if (candidate + t.bytes <= c->offset) break;
    candidate = std::max(candidate, AlignUp(c->offset + c->bytes, alignment));
  }
  return candidate;
}

uint64_t LowerBound(const std::vector<Lifetime>& lifetimes, size_t n_ops) {
  uint64_t best = 0;
  for (size_t op = 0; op < n_ops; ++op) {
    uint64_t live = 0;
    for (const Lifetime& t : lifetimes) {
      if (t.first_op <= int64_t(op) && int64_t(op) <= t.last_op) live += t.bytes;
    }
    best = std::max(best, live);
  }
  return best;
}

}  // namespace

Status PlanArena(Plan* plan, uint64_t alignment, ArenaReport* report) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    return Status::Error(StatusCode::kInvalidArgument, "arena alignment %llu is not a power of 2",
                         static_cast<unsigned long long>(alignment));
  }
  std::vector<Lifetime> lifetimes = ArenaLifetimes(*plan, alignment);
  std::vector<Lifetime*> order;
  for (Lifetime& t : lifetimes) order.push_back(&t);
  // Largest first; ties by birth then index so the result does not depend on sort stability.
  std::sort(order.begin(), order.end(), [](const Lifetime* a, const Lifetime* b) {
    if (a->bytes != b->bytes) return a->bytes > b->bytes;
    if (a->first_op != b->first_op) return a->first_op < b->first_op;
    return a->tensor < b->tensor;
  });
  std::vector<const Lifetime*> placed;
  ArenaReport r;
  for (Lifetime* t : order) {
    t->offset = LowestFreeOffset(*t, placed, alignment);
    placed.push_back(t);
    r.arena_bytes = std::max(r.arena_bytes, t->offset + t->bytes);
    r.naive_bytes += t->bytes;
  }
  for (const Lifetime& t : lifetimes) plan->tensors[t.tensor].offset = t.offset;
  r.lower_bound_bytes = LowerBound(lifetimes, plan->ops.size());
  plan->buffer_bytes[static_cast<int>(BufferId::kArena)] = r.arena_bytes;
  *report = r;
  return Status::Ok();
}

}  // namespace staticlm
