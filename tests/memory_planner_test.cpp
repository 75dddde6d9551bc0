// The memory planner on random op graphs: tensors live at the same time never share bytes,
// the arena is never below the lower bound, and sharing actually happens.
#include <random>

#include <gtest/gtest.h>

#include "runtime/plan/memory_planner.h"

namespace staticlm {
namespace {

struct Interval {
  int64_t first = -1, last = -1;
};

std::vector<Interval> Lifetimes(const Plan& plan) {
  std::vector<Interval> life(plan.tensors.size());
  for (size_t i = 0; i < plan.ops.size(); ++i) {
    const Op& op = plan.ops[i];
    auto touch = [&](uint32_t t) {
      if (life[t].first < 0) life[t].first = int64_t(i);
      life[t].last = int64_t(i);
    };
    for (int j = 0; j < op.n_inputs; ++j) touch(op.inputs[j]);
    for (int j = 0; j < op.n_outputs; ++j) touch(op.outputs[j]);
  }
  return life;
}

Plan RandomPlan(std::mt19937* rng, int n_tensors, int n_ops) {
  Plan plan;
  std::uniform_int_distribution<int64_t> size(1, 5000);
  std::uniform_int_distribution<int> pick(0, n_tensors - 1);
  for (int t = 0; t < n_tensors; ++t) {
    TensorRegion r;
    r.buffer = (t % 7 == 0) ? BufferId::kWeights : BufferId::kArena;
    r.shape[0] = size(*rng);
    plan.tensors.push_back(r);
  }
  for (int i = 0; i < n_ops; ++i) {
    Op op;
    op.kind = OpKind::kAdd;
    op.n_inputs = 2;
    op.inputs[0] = uint32_t(pick(*rng));
    op.inputs[1] = uint32_t(pick(*rng));
    op.n_outputs = 1;
    op.outputs[0] = uint32_t(pick(*rng));
    plan.ops.push_back(op);
  }
  return plan;
}

TEST(MemoryPlannerTest, LiveTensorsNeverOverlapOnRandomGraphs) {
  std::mt19937 rng(2026);
  for (int trial = 0; trial < 200; ++trial) {
    Plan plan = RandomPlan(&rng, 5 + trial % 60, 3 + trial % 90);
    ArenaReport report;
    ASSERT_TRUE(PlanArena(&plan, 64, &report).ok());
    auto life = Lifetimes(plan);
    for (size_t a = 0; a < plan.tensors.size(); ++a) {
      const TensorRegion& ta = plan.tensors[a];
      if (ta.buffer != BufferId::kArena || life[a].first < 0) continue;
      EXPECT_EQ(ta.offset % 64, 0u);
      EXPECT_LE(ta.offset + ta.bytes(), report.arena_bytes);
      for (size_t b = a + 1; b < plan.tensors.size(); ++b) {
        const TensorRegion& tb = plan.tensors[b];
        if (tb.buffer != BufferId::kArena || life[b].first < 0) continue;
        bool live_together = life[a].first <= life[b].last && life[b].first <= life[a].last;
        bool share_bytes = ta.offset < tb.offset + tb.bytes() && tb.offset < ta.offset + ta.bytes();
        EXPECT_FALSE(live_together && share_bytes)
            << "trial " << trial << ": tensors " << a << " and " << b << " overlap";
      }
    }
    EXPECT_GE(report.arena_bytes, report.lower_bound_bytes);
    EXPECT_LE(report.arena_bytes, report.naive_bytes);
  }
}

TEST(MemoryPlannerTest, ChainSharesBytes) {
  // a → b → c → d: each tensor dies after the next is made, so two slots suffice.
  Plan plan;
  for (int t = 0; t < 4; ++t) {
    TensorRegion r;
    r.shape[0] = 256;  // 1 KiB of f32
    plan.tensors.push_back(r);
  }
  for (uint32_t i = 0; i < 3; ++i) {
    Op op;
    op.n_inputs = 1;
    op.inputs[0] = i;
    op.n_outputs = 1;
    op.outputs[0] = i + 1;
    plan.ops.push_back(op);
  }
  ArenaReport report;
  ASSERT_TRUE(PlanArena(&plan, 64, &report).ok());
  EXPECT_EQ(report.naive_bytes, 4096u);
  EXPECT_EQ(report.lower_bound_bytes, 2048u);
  EXPECT_EQ(report.arena_bytes, 2048u);
}

TEST(MemoryPlannerTest, RejectsBadAlignment) {
  Plan plan;
  ArenaReport report;
  EXPECT_FALSE(PlanArena(&plan, 48, &report).ok());
}

}  // namespace
}  // namespace staticlm
