#include "runtime/plan/plan_hash.h"

#include <cstring>

namespace staticlm {
namespace {

class Fnv1a {
 public:
  explicit Fnv1a(uint64_t seed) : h_(seed) {}
  void Bytes(const void* data, size_t n) {
    const uint8_t* p = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < n; ++i) h_ = (h_ ^ p[i]) * 0x100000001b3ull;
  }
  void U64(uint64_t v) { Bytes(&v, sizeof(v)); }
  void I64(int64_t v) { U64(static_cast<uint64_t>(v)); }
  void F32(float v) {
    uint32_t bits = 0;
    std::memcpy(&bits, &v, sizeof(bits));
    U64(bits);
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_;
};

void HashTensor(Fnv1a* h, const TensorRegion& t) {
  h->U64(static_cast<uint64_t>(t.buffer));
  h->U64(static_cast<uint64_t>(t.dtype));
  h->U64(t.rank);
  h->U64(t.offset);
  for (int64_t d : t.shape) h->I64(d);
  h->Bytes(t.name, strnlen(t.name, sizeof(t.name)));
}

void HashOp(Fnv1a* h, const Op& op) {
  h->U64(static_cast<uint64_t>(op.kind));
  h->U64(op.n_inputs);
  h->U64(op.n_outputs);
  for (int i = 0; i < op.n_inputs; ++i) h->U64(op.inputs[i]);
  for (int i = 0; i < op.n_outputs; ++i) h->U64(op.outputs[i]);
  const OpParams& p = op.params;
  h->I64(p.layer);
  h->I64(p.n_heads);
  h->I64(p.n_kv_heads);
  h->I64(p.head_dim);
  h->I64(p.norm_group);
  h->F32(p.eps);
  h->F32(p.rope_base);
  h->F32(p.scale);
  h->F32(p.embed_scale);
  h->F32(p.rope_scale);
  h->U64((p.rows_from_step ? 1u : 0u) | (p.norm_input ? 2u : 0u) | (p.silu_mul ? 4u : 0u) |
         (p.accumulate ? 8u : 0u) | (p.rope_halves ? 16u : 0u) |
         // rope_dims above the flags: 0 (the whole head) leaves earlier plans' hashes as they were.
         static_cast<uint64_t>(static_cast<uint32_t>(p.rope_dims)) << 8);
  h->U64(p.n_weights);
  h->U64(static_cast<uint64_t>(p.cache_policy));
  h->U64(static_cast<uint64_t>(p.kv_quant));
  h->I64(p.window);
  h->I64(p.sinks);
  h->I64(p.cache_slots);
  h->I64(p.kv_group);
  h->I64(p.recent_slots);
}

}  // namespace

uint64_t HashPlan(const Plan& plan, uint64_t seed) {
  Fnv1a h(seed);
  h.I64(plan.limits.max_context);
  h.I64(plan.limits.max_batch);
  h.I64(plan.limits.prefill_chunk);
  h.U64(static_cast<uint64_t>(plan.limits.kv_dtype));
  h.I64(plan.limits.window);
  h.I64(plan.limits.sinks);
  h.I64(plan.limits.global_every);
  h.I64(plan.limits.cache_chunk);
  h.I64(plan.limits.rows_are_sequences ? 1 : 0);
  // Only when set, so the plans of every other mode (and the sessions saved with them) keep
  // their hash.
  if (plan.limits.global_window != 0) h.I64(plan.limits.global_window);
  for (uint64_t b : plan.buffer_bytes) h.U64(b);
  h.U64(plan.tokens_tensor);
  h.U64(plan.logits_tensor);
  h.U64(plan.tensors.size());
  for (const TensorRegion& t : plan.tensors) HashTensor(&h, t);
  h.U64(plan.ops.size());
  for (const Op& op : plan.ops) HashOp(&h, op);
  return h.value();
}

}  // namespace staticlm
