// The attention cases of the every-op test: RoPE'd queries and keys stored into one layer's
// cache (kKvStore) and attended (kAttention), step after step, for every cache policy (static,
// sliding window, sinks, and hybrid: a sliding layer and a static one in one plan) and every
// KV type (f16, f32, q8, q4), with one sequence's rows and with batched rows (a sequence per
// row, each at its own position); ring caches wrap around several times.
#include <cmath>
#include <random>

#include "tests/support/op_cases.h"

namespace staticlm::optest {
namespace {

using vktest::PlanHarness;
using vktest::PutFloats;
using vktest::RandomFloats;

enum class Policy { kStatic, kSliding, kSink, kHybrid };
const char* PolicyName(Policy p) {
  switch (p) {
    case Policy::kStatic:
      return "static";
    case Policy::kSliding:
      return "sliding";
    case Policy::kSink:
      return "sink";
    case Policy::kHybrid:
      return "hybrid";
  }
  return "?";
}

enum class Kv { kF16, kF32, kQ8, kQ4 };
const char* KvName(Kv k) {
  switch (k) {
    case Kv::kF16:
      return "f16";
    case Kv::kF32:
      return "f32";
    case Kv::kQ8:
      return "q8";
    case Kv::kQ4:
      return "q4";
  }
  return "?";
}

// The shape every attention case shares: 6 query heads over 2 KV heads (grouped queries).
constexpr int32_t kHeads = 6, kKvHeads = 2, kMaxContext = 304, kWindow = 13, kSinks = 3;
constexpr int32_t kQ4Group = 8;
constexpr float kRopeBase = 10000.0f;

// Head size: q8 rotates rows by a Hadamard transform, Phi-3's 96 in blocks of 64 and 32; q4
// groups channels by 8; f16/f32 take one that is neither a power of two nor q8's.
int32_t HeadDim(Kv kv) {
  return kv == Kv::kQ8 ? 96 : (kv == Kv::kQ4 ? 72 : 80);
}

// The sizes of one layer's cache tensors and what its ops read.
struct Layer {
  CachePolicy policy;
  int32_t slots;
  uint32_t caches[6];
  int n_caches;
};

// `factors`: the RoPE frequency factors (a weight), a sink cache's last attention input, or -1.
// `halves`, `rope_dims`: the q and k RoPE's pairing and width, which a sink cache's attention
// turns its queries by.
Layer AddLayer(PlanHarness& h, Kv kv, CachePolicy policy, int32_t batch, int32_t per_sequence,
               int32_t layer_index, uint32_t q, uint32_t k, uint32_t v, uint32_t o, bool halves,
               int32_t rope_dims, int64_t factors = -1) {
  const int32_t hd = HeadDim(kv), heads = batch * kKvHeads;
  const int32_t chunk = h.plan.limits.prefill_chunk;
  const bool ring = policy != CachePolicy::kStatic;
  int32_t slots = ring ? kWindow + per_sequence - 1 : kMaxContext;
  if (kv == Kv::kQ4) {
    // A Sink ring starts after the sinks' slots rounded up to a group (kv_policy.h SinkSlots);
    // every cache holds whole groups.
    const int32_t sink_slots = (kSinks + kQ4Group - 1) / kQ4Group * kQ4Group;
    if (policy == CachePolicy::kSink) slots = sink_slots + kWindow - kSinks + per_sequence - 1;
    slots = (slots + kQ4Group - 1) / kQ4Group * kQ4Group;
  }
  const int32_t recent = kQ4Group + per_sequence - 1;
  const DType type = kv == Kv::kQ8   ? kDTypeI8
                     : kv == Kv::kQ4 ? kDTypeKvQ4
                                     : (kv == Kv::kF16 ? DType::kF16 : DType::kF32);
  Layer l{policy, slots, {}, 0};
  l.caches[l.n_caches++] = h.Tensor(BufferId::kKvCache, type, {heads, slots, hd}, "k cache");
  l.caches[l.n_caches++] = h.Tensor(BufferId::kKvCache, type, {heads, slots, hd}, "v cache");
  if (kv == Kv::kQ8) {
    l.caches[l.n_caches++] = h.Tensor(BufferId::kKvCache, DType::kF32, {heads, slots}, "k scale");
    l.caches[l.n_caches++] = h.Tensor(BufferId::kKvCache, DType::kF32, {heads, slots}, "v scale");
  } else if (kv == Kv::kQ4) {
    l.caches[l.n_caches++] =
        h.Tensor(BufferId::kKvCache, DType::kF32, {heads, slots / kQ4Group, 2, hd}, "k params");
    l.caches[l.n_caches++] =
        h.Tensor(BufferId::kKvCache, DType::kF32, {heads, slots, 2}, "v params");
    l.caches[l.n_caches++] =
        h.Tensor(BufferId::kKvCache, DType::kF32, {heads, recent, hd}, "k recent");
    l.caches[l.n_caches++] =
        h.Tensor(BufferId::kKvCache, DType::kF32, {heads, recent, hd}, "v recent");
  }
  const int32_t score_rows = h.plan.limits.rows_are_sequences ? chunk * kHeads : kHeads;
  uint32_t scores = h.Tensor(BufferId::kArena, DType::kF32, {score_rows, slots}, "scores");
  OpParams p;
  p.layer = layer_index;
  p.n_heads = kHeads;
  p.n_kv_heads = kKvHeads;
  p.head_dim = hd;
  p.scale = 1.0f / std::sqrt(float(hd));
  p.rope_base = kRopeBase;  // a sink cache re-rotates its queries
  p.cache_slots = slots;
  p.cache_policy = policy;
  p.kv_quant = kv == Kv::kQ8 ? KvQuant::kQ8 : (kv == Kv::kQ4 ? KvQuant::kQ4 : KvQuant::kNone);
  p.window = ring ? kWindow : 0;
  p.sinks = policy == CachePolicy::kSink ? kSinks : 0;
  p.rope_halves = halves && policy == CachePolicy::kSink;  // contract: Sink caches only
  p.rope_dims = policy == CachePolicy::kSink ? rope_dims : 0;
  if (kv == Kv::kQ4) {
    p.kv_group = kQ4Group;
    p.recent_slots = recent;
  }
  std::vector<uint32_t> store_out(l.caches, l.caches + l.n_caches);
  h.AddOp(OpKind::kKvStore, {k, v}, store_out, p);
  // Attention's inputs: q, k cache, v cache, scores, then the side tensors (plan.h, KvLayout).
  std::vector<uint32_t> attend_in = {q, l.caches[0], l.caches[1], scores};
  attend_in.insert(attend_in.end(), l.caches + 2, l.caches + l.n_caches);
  if (factors >= 0) attend_in.push_back(static_cast<uint32_t>(factors));
  h.AddOp(OpKind::kAttention, attend_in, {o}, p);
  return l;
}

// One sequence's chunks, of every length, starting mid-cache: for a ring of W + C − 1 slots
// they wrap around it several times; for the static cache they end at its last slot.
std::vector<CaseStep> SequenceSteps(bool ring) {
  if (!ring) return {{7, 0}, {9, 7}, {1, 16}, {9, 150}, {1, 290}, {3, 301}};
  return {{7, 0}, {9, 7}, {1, 16}, {9, 17}, {5, 26}, {9, 31}, {1, 40}, {8, 41}, {3, 49}, {1, 52}};
}

// A batched plan's steps: three sequences each decoding a token a step at its own position
// (sequence 2 starts far along), in an order that changes every step; sequence 1 leaves after
// step 7. Sequence 0 runs past the window (kWindow): from there a sink cache turns its
// queries by a nonzero delta onto sinks it wrote itself.
std::vector<CaseStep> BatchedSteps(bool ring) {
  int32_t next[3] = {0, 5, ring ? 1000000 : 250};
  std::vector<CaseStep> steps;
  for (int step = 0; step < kWindow + 7; ++step) {
    CaseStep s;
    for (int k = 0; k < 3; ++k) {
      const int32_t seq = (k + step) % 3;
      if (seq == 1 && step > 7) continue;
      s.row_sequences.push_back(seq);
      s.row_positions.push_back(next[seq]++);
    }
    s.n_tokens = int32_t(s.row_sequences.size());
    steps.push_back(s);
  }
  return steps;
}

double AttentionThreshold(Kv kv) {
  return kv == Kv::kQ8 ? kAttentionQ8 : (kv == Kv::kQ4 ? kAttentionQ4 : kProduct);
}

// `factors`: RoPE with frequency factors (Llama 3's, linear or YaRN scaling), which a sink
// cache's attention takes too. `halves`: RoPE on halves (Gemma, Qwen, every Hugging Face
// folder) rather than adjacent pairs; both layouts reach the cache, and a sink cache's
// attention turns its queries by the same pairing. `rope_dims` > 0: partial RoPE, that many
// of each head's elements (Phi-4-mini's), again in the sink cache's turn too.
OpCase AttentionCase(Kv kv, Policy policy, bool batched, uint32_t seed, bool halves,
                     bool factors = false, int32_t rope_dims = 0) {
  const int32_t batch = batched ? 3 : 1;
  const int32_t chunk = batched ? batch : 9, per_sequence = batched ? 1 : chunk;
  const int32_t hd = HeadDim(kv);
  const int32_t pairs = (rope_dims > 0 ? rope_dims : hd) / 2;
  const std::string form = std::string("attention ") + KvName(kv) + " " + PolicyName(policy) +
                           (factors ? " rope factors" : "") +
                           (halves && policy == Policy::kSink ? " halves" : "") +
                           (rope_dims > 0 ? " partial " + std::to_string(rope_dims) : "");
  OpCase c = NewCase(form + (batched ? " batched" : " chunk 9"), form, chunk, kMaxContext);
  PlanHarness& h = c.harness;
  h.plan.limits.max_batch = batch;
  h.plan.limits.rows_are_sequences = batched;
  h.plan.limits.window = policy == Policy::kStatic ? 0 : kWindow;
  h.plan.limits.sinks = policy == Policy::kSink ? kSinks : 0;
  h.plan.limits.global_every = policy == Policy::kHybrid ? 2 : 0;
  h.plan.limits.cache_chunk = per_sequence;
  h.plan.limits.kv_dtype = kv == Kv::kQ8   ? kDTypeI8
                           : kv == Kv::kQ4 ? kDTypeKvQ4
                                           : (kv == Kv::kF16 ? DType::kF16 : DType::kF32);
  uint32_t q = h.Tensor(BufferId::kArena, DType::kF32, {chunk, kHeads * hd}, "q");
  uint32_t k = h.Tensor(BufferId::kArena, DType::kF32, {chunk, kKvHeads * hd}, "k");
  uint32_t v = h.Tensor(BufferId::kArena, DType::kF32, {chunk, kKvHeads * hd}, "v");
  OpParams rope;
  rope.head_dim = hd;
  rope.rope_base = kRopeBase;
  rope.rope_halves = halves;
  rope.rope_dims = rope_dims;
  const int64_t rope_factors =
      factors ? int64_t{h.Tensor(BufferId::kWeights, DType::kF32, {pairs}, "rope factors")} : -1;
  std::vector<uint32_t> rope_in;
  if (factors) rope_in.push_back(static_cast<uint32_t>(rope_factors));
  h.AddOp(OpKind::kRope, rope_in, {q}, rope);
  h.AddOp(OpKind::kRope, rope_in, {k}, rope);
  std::vector<uint32_t> outputs;
  std::vector<Layer> layers;
  const CachePolicy first = policy == Policy::kStatic ? CachePolicy::kStatic
                            : policy == Policy::kSink ? CachePolicy::kSink
                                                      : CachePolicy::kSlidingWindow;
  outputs.push_back(h.Tensor(BufferId::kArena, DType::kF32, {chunk, kHeads * hd}, "o"));
  layers.push_back(AddLayer(h, kv, first, batch, per_sequence, 0, q, k, v, outputs.back(), halves,
                            rope_dims, rope_factors));
  if (policy == Policy::kHybrid) {  // layer 1 global (static), as global_every 2 makes it
    outputs.push_back(h.Tensor(BufferId::kArena, DType::kF32, {chunk, kHeads * hd}, "o global"));
    layers.push_back(AddLayer(h, kv, CachePolicy::kStatic, batch, per_sequence, 1, q, k, v,
                              outputs.back(), halves, rope_dims));
  }
  h.Allocate();
  PutFloats(h, q, RandomFloats(size_t(chunk * kHeads * hd), seed));
  PutFloats(h, k, RandomFloats(size_t(chunk * kKvHeads * hd), seed + 1));
  PutFloats(h, v, RandomFloats(size_t(chunk * kKvHeads * hd), seed + 2));
  if (factors) {  // divisors from 1 to 40, as a linear or YaRN scaling's
    std::vector<float> f(static_cast<size_t>(pairs));
    for (size_t i = 0; i < f.size(); ++i) f[i] = 1.0f + 39.0f * float(i) / float(f.size());
    PutFloats(h, static_cast<uint32_t>(rope_factors), f);
  }
  // Small random bytes everywhere in the cache (finite in every type): a slot read before it
  // is written, or one a backend reads outside the window, shows.
  std::mt19937 rng(seed + 3);
  for (uint8_t& byte : h.bytes[int(BufferId::kKvCache)]) byte = uint8_t(rng() % 61);
  // Positions past max_context only where no layer is static.
  const bool unbounded = policy == Policy::kSliding || policy == Policy::kSink;
  c.steps = batched ? BatchedSteps(unbounded) : SequenceSteps(policy != Policy::kStatic);
  // The rotated q and k are rows of the step; o after every step; the float caches and side
  // tensors at the end (the q8/q4 codes show through o and the scales).
  c.checks = {{q, kRounding}, {k, kRounding}};
  for (uint32_t o : outputs) c.checks.push_back({o, AttentionThreshold(kv)});
  for (const Layer& l : layers) {
    const bool float_codes = kv == Kv::kF16 || kv == Kv::kF32;
    for (int i = float_codes ? 0 : 2; i < l.n_caches; ++i) {
      c.checks.push_back({l.caches[i], float_codes ? kRounding : kReduction});
    }
  }
  return c;
}

}  // namespace

void AddAttentionCases(std::vector<OpCase>* out) {
  uint32_t seed = 700;
  for (Kv kv : {Kv::kF16, Kv::kF32, Kv::kQ8, Kv::kQ4}) {
    for (Policy policy : {Policy::kStatic, Policy::kSliding, Policy::kSink, Policy::kHybrid}) {
      for (bool batched : {false, true}) {
        // f32 takes RoPE on halves, the others adjacent pairs.
        out->push_back(AttentionCase(kv, policy, batched, seed, kv == Kv::kF32));
        seed += 4;
      }
    }
  }
  // A sink cache turns its queries back by the keys' frequency factors, with adjacent pairs
  // (f16 and q8 take that layout here) and with halves.
  for (Kv kv : {Kv::kF16, Kv::kQ8}) {
    for (bool batched : {false, true}) {
      out->push_back(AttentionCase(kv, Policy::kSink, batched, seed, false, true));
      seed += 4;
    }
  }
  // q8 turns the sinks' query as a whole row before its Hadamard transform, the float caches
  // element by element: halves in both forms, with factors (f16) and without (q8).
  for (bool batched : {false, true}) {
    out->push_back(AttentionCase(Kv::kQ8, Policy::kSink, batched, seed, true));
    out->push_back(AttentionCase(Kv::kF16, Policy::kSink, batched, seed + 1, true, true));
    seed += 4;
  }
  // Partial RoPE (48 of 64 or 80 elements): the sinks' query turn leaves the rest as they are,
  // in both forms (q8's whole row, the float caches' element by element).
  for (bool batched : {false, true}) {
    out->push_back(AttentionCase(Kv::kQ8, Policy::kSink, batched, seed, true, true, 48));
    out->push_back(AttentionCase(Kv::kF16, Policy::kSink, batched, seed + 1, true, false, 48));
    seed += 4;
  }
}

}  // namespace staticlm::optest
