#include "runtime/plan/plan_report.h"

#include <cstdio>

#include "platform/text_sink.h"
#include "runtime/plan/plan_cost.h"

namespace staticlm {
namespace {

unsigned long long U(uint64_t v) {
  return static_cast<unsigned long long>(v);
}

void AddOpRow(const Plan& plan, size_t index, const Op& op, const StepCost& c, TextSink* text) {
  const TensorRegion& out = plan.tensors[op.outputs[0]];
  text->Add("%5zu  %-10s %-22s ", index, OpKindName(op.kind), out.name);
  char inputs[96] = {0};
  size_t used = 0;
  for (int i = 0; i < op.n_inputs && used < sizeof(inputs); ++i) {
    int n = std::snprintf(inputs + used, sizeof(inputs) - used, "%s%s", i ? "," : "",
                          plan.tensors[op.inputs[i]].name);
    if (n > 0) used += static_cast<size_t>(n);
  }
  text->Add("%-44.44s %8s+%-10llu %12llu %10llu %12llu\n", inputs, BufferName(out.buffer),
            U(out.offset), U(c.bytes_read), U(c.bytes_written), U(c.flops));
}

// One line per layer: its cache policy, size and bytes (the tensors its kKvStore writes).
void AddCacheRows(const Plan& plan, TextSink* text) {
  text->Add("kv cache per layer:\n%5s  %-15s %6s %5s %7s %5s %12s\n", "layer", "policy", "window",
            "sinks", "slots", "kv", "bytes");
  uint64_t total = 0;
  for (const Op& op : plan.ops) {
    if (op.kind != OpKind::kKvStore) continue;
    const OpParams& p = op.params;
    uint64_t bytes = 0;
    for (int i = 0; i < op.n_outputs; ++i) bytes += plan.tensors[op.outputs[i]].bytes();
    total += bytes;
    text->Add("%5d  %-15s %6d %5d %7d %5s %12llu\n", p.layer, CachePolicyName(p.cache_policy),
              p.window, p.sinks, p.cache_slots,
              p.kv_quant == KvQuant::kNone ? DTypeName(plan.tensors[op.outputs[0]].dtype)
                                           : KvQuantName(p.kv_quant),
              U(bytes));
  }
  text->Add("kv cache: %llu bytes in the tensors (%llu with alignment)\n\n", U(total),
            U(plan.buffer_bytes[static_cast<int>(BufferId::kKvCache)]));
}

}  // namespace

size_t WritePlanTable(const ReportedPlan* plans, int n_plans, char* out, size_t capacity) {
  TextSink text(out, capacity);
  for (int p = 0; p < n_plans; ++p) {
    const ReportedPlan& r = plans[p];
    const Plan& plan = *r.plan;
    text.Add("%s plan: %zu ops, %zu tensors, %d token%s per step, context %d, chunk %d\n", r.name,
             plan.ops.size(), plan.tensors.size(), r.n_tokens, r.n_tokens == 1 ? "" : "s",
             plan.limits.max_context, plan.limits.prefill_chunk);
    text.Add("%5s  %-10s %-22s %-44s %19s %12s %10s %12s\n", "op", "kernel", "output", "inputs",
             "output region", "bytes read", "written", "FLOPs");
    StepCost total;
    for (size_t i = 0; i < plan.ops.size(); ++i) {
      StepCost c = EstimateOpCost(plan, plan.ops[i], r.n_tokens, 0);
      total.Add(c);
      AddOpRow(plan, i, plan.ops[i], c, &text);
    }
    text.Add(
        "total per step (at position 0): %llu bytes read (%llu of weights, %llu of KV "
        "cache), %llu written, %llu FLOPs\n",
        U(total.bytes_read), U(total.weight_bytes), U(total.kv_cache_bytes), U(total.bytes_written),
        U(total.flops));
    text.Add("arena: %llu bytes (lower bound %llu, %.3f x; no sharing %llu)\n\n",
             U(r.arena.arena_bytes), U(r.arena.lower_bound_bytes),
             r.arena.lower_bound_bytes
                 ? double(r.arena.arena_bytes) / double(r.arena.lower_bound_bytes)
                 : 0.0,
             U(r.arena.naive_bytes));
  }
  if (n_plans > 0) AddCacheRows(*plans[0].plan, &text);
  return text.needed();
}

size_t WritePlanJson(const ReportedPlan* plans, int n_plans, char* out, size_t capacity) {
  TextSink text(out, capacity);
  text.Add("{");
  for (int p = 0; p < n_plans; ++p) {
    const ReportedPlan& r = plans[p];
    StepCost c = EstimateStepCost(*r.plan, r.n_tokens, 0);
    text.Add(
        "%s\"%s\": {\"arena_bytes\": %llu, \"lower_bound_bytes\": %llu, "
        "\"naive_bytes\": %llu, \"bytes_read_per_step\": %llu, "
        "\"bytes_written_per_step\": %llu, \"weight_bytes_per_step\": %llu, "
        "\"flops_per_step\": %llu, \"ops\": %zu, \"tensors\": %zu, "
        "\"tokens_per_step\": %d}",
        p ? ", " : "", r.name, U(r.arena.arena_bytes), U(r.arena.lower_bound_bytes),
        U(r.arena.naive_bytes), U(c.bytes_read), U(c.bytes_written), U(c.weight_bytes), U(c.flops),
        r.plan->ops.size(), r.plan->tensors.size(), r.n_tokens);
  }
  text.Add("}\n");
  return text.needed();
}

}  // namespace staticlm
