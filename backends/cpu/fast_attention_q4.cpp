#include "backends/cpu/fast_attention_q4.h"

#include <cmath>
#include <cstdint>

#include "contract/kv_policy.h"

namespace staticlm::cpu::q4 {
namespace {

inline int64_t Min(int64_t a, int64_t b) {
  return a < b ? a : b;
}
inline int64_t Max(int64_t a, int64_t b) {
  return a > b ? a : b;
}

// Where a query's attended positions live: [begin, split) in the quantized cache, [split, end)
// in the rings (QuantizedEnd of the step).
struct Spans {
  int64_t begin, split, end;
};

// Scores of the pass's heads over the attended positions, in order; returns their count.
int64_t Score(const Kernels& isa, const ref::KvCacheView& c, int64_t kv, const Spans& s,
              const Pass& pass, float* vmax) {
  const OpParams& p = c.params;
  const int64_t hd = p.head_dim, group = p.kv_group;
  int64_t at = 0;
  for (int64_t t = s.begin; t < s.split;) {
    // The rest of t's key group: its slots are consecutive (slots are a multiple of group).
    const int64_t group_first = t / group * group;
    const int64_t stop = Min(group_first + group, s.split);
    const int64_t slot = KvSlot(p, t);
    const int64_t group_slot = slot - (t - group_first);
    const float* params = c.k_side + (kv * (p.cache_slots / group) + group_slot / group) * 2 * hd;
    isa.score_codes(pass, c.k + (kv * p.cache_slots + slot) * hd / 2, params, stop - t, at, vmax);
    at += stop - t;
    t = stop;
  }
  for (int64_t t = s.split; t < s.end;) {
    const int64_t ring_slot = t % p.recent_slots;
    const int64_t count = Min(s.end - t, p.recent_slots - ring_slot);
    isa.score_rows(pass, c.k_recent + (kv * p.recent_slots + ring_slot) * hd, count, at, vmax);
    at += count;
    t += count;
  }
  return at;
}

// out[g] = Σ_t scores[g][t] · v_t, plus the quantized values' mins into bias[g].
void AddValues(const Kernels& isa, const ref::KvCacheView& c, int64_t kv, const Spans& s,
               const Pass& pass, float* bias) {
  const OpParams& p = c.params;
  const int64_t hd = p.head_dim;
  int64_t at = 0;
  for (int64_t t = s.begin; t < s.split;) {
    const int64_t slot = KvSlot(p, t);
    const int64_t count = Min(s.split - t, p.cache_slots - slot);
    const int64_t row = kv * p.cache_slots + slot;
    isa.add_codes(pass, c.v + row * hd / 2, c.v_side + row * 2, count, at, bias);
    at += count;
    t += count;
  }
  for (int64_t t = s.split; t < s.end;) {
    const int64_t ring_slot = t % p.recent_slots;
    const int64_t count = Min(s.end - t, p.recent_slots - ring_slot);
    isa.add_rows(pass, c.v_recent + (kv * p.recent_slots + ring_slot) * hd, count, at);
    at += count;
    t += count;
  }
}

// Query heads [h0, h0 + n) of one row at `position`, all reading KV head `kv`.
void AttendPass(const Kernels& isa, const float* q_row, int64_t position, int64_t split,
                const ref::KvCacheView& c, int64_t h0, int n, float* scores_all, float* out_row) {
  const OpParams& p = c.params;
  const int64_t hd = p.head_dim;
  const int64_t kv = h0 / (p.n_heads / p.n_kv_heads);
  const AttendedSpans span = Attended(p, position);  // no sinks: q4 has no Sink policy
  const Spans s{span.begin, Max(span.begin, Min(position + 1, split)), position + 1};
  Pass pass;
  pass.n = n;
  pass.head_dim = hd;
  pass.scale = p.scale;
  float vmax[kMaxHeads], inv_sum[kMaxHeads], bias[kMaxHeads];
  for (int g = 0; g < n; ++g) {
    pass.q[g] = q_row + (h0 + g) * hd;
    pass.scores[g] = scores_all + (h0 + g) * p.cache_slots;
    pass.out[g] = out_row + (h0 + g) * hd;
    vmax[g] = -INFINITY;
    bias[g] = 0.0f;
  }
  const int64_t count = Score(isa, c, kv, s, pass, vmax);
  for (int g = 0; g < n; ++g) {
    inv_sum[g] = 1.0f / isa.exp_sum(pass.scores[g], count, vmax[g]);
    for (int64_t d = 0; d < hd; ++d) pass.out[g][d] = 0.0f;
  }
  AddValues(isa, c, kv, s, pass, bias);
  for (int g = 0; g < n; ++g) {
    for (int64_t d = 0; d < hd; ++d) pass.out[g][d] = (pass.out[g][d] + bias[g]) * inv_sum[g];
  }
}

}  // namespace

void AddMins(const Pass& pass, const float* params, int64_t count, int64_t at, float* bias) {
  for (int g = 0; g < pass.n; ++g) {
    // Eight partial sums: a chain of additions would wait on each one.
    float part[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    const float* w = pass.scores[g] + at;
    int64_t i = 0;
    for (; i + 8 <= count; i += 8) {
      for (int k = 0; k < 8; ++k) part[k] += w[i + k] * params[2 * (i + k) + 1];
    }
    for (; i < count; ++i) part[i % 8] += w[i] * params[2 * i + 1];
    bias[g] +=
        ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
  }
}

void Attend(const Kernels& isa, const float* q, int64_t rows, int32_t first_position,
            const ref::KvCacheView& cache, float* scores, float* out, int64_t head_begin,
            int64_t head_end) {
  const OpParams& p = cache.params;
  const int64_t width = int64_t{p.n_heads} * p.head_dim;
  const int64_t group = p.n_heads / p.n_kv_heads;
  const int64_t split = QuantizedEnd(p, first_position + rows);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t h = head_begin; h < head_end;) {
      // Heads sharing h's KV head, at most max_heads per pass.
      const int64_t group_end = (h / group + 1) * group;
      const int n = static_cast<int>(Min(Min(group_end, head_end) - h, isa.max_heads));
      AttendPass(isa, q + r * width, first_position + r, split, cache, h, n, scores,
                 out + r * width);
      h += n;
    }
  }
}

}  // namespace staticlm::cpu::q4
