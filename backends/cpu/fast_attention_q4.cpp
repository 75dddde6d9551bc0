#include "backends/cpu/fast_attention_q4.h"

#include <cmath>
#include <cstdint>

#include "backends/cpu/attention_split.h"
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

// Scores of the pass's heads over the positions of s, in order from score index `at`.
void Score(const Kernels& isa, const ref::KvCacheView& c, int64_t kv, const Spans& s,
           const Pass& pass, int64_t at, float* vmax) {
  const OpParams& p = c.params;
  const int64_t hd = p.head_dim, group = p.kv_group;
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
}

// out[g] = Σ_t scores[g][t] · v_t over the positions of s (their scores from index `at`), plus
// the quantized values' mins into bias[g].
void AddValues(const Kernels& isa, const ref::KvCacheView& c, int64_t kv, const Spans& s,
               const Pass& pass, int64_t at, float* bias) {
  const OpParams& p = c.params;
  const int64_t hd = p.head_dim;
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

// The positions of keys [key_begin, key_end) of those a query attends, in attended order: the
// sinks' (0 … sink_end − 1, scored with the query turned to its position inside the cache) and
// the window's (from `begin` on), each split at `split` into the quantized cache and the rings.
struct KeyPieces {
  Spans sinks, recent;
  int64_t sinks_at, recent_at;  // their first key's index
};

KeyPieces PiecesOf(const AttendedSpans& a, int64_t split, int64_t key_begin, int64_t key_end) {
  auto spans = [split](int64_t begin, int64_t end) {
    return Spans{begin, Max(begin, Min(end, split)), end};
  };
  KeyPieces k;
  k.sinks_at = key_begin;
  k.sinks = spans(key_begin, Max(key_begin, Min(key_end, a.sink_end)));
  k.recent_at = Max(key_begin, a.sink_end);
  k.recent = spans(a.begin + (k.recent_at - a.sink_end), a.begin + (key_end - a.sink_end));
  if (key_end <= a.sink_end) k.recent = Spans{0, 0, 0};
  return k;
}

// Query heads [h0, h0 + n) of one row at `position`, all reading KV head h0 / group, over keys
// [key_begin, key_end) of those it attends: the scores, their largest (vmax), e^(score − vmax)
// in place and its sum (sums), and into out[g] (head_dim floats each) the weighted values,
// divided by the sum when `normalise` (the whole softmax) or not (a part's, attention_split.h).
void AttendPass(const Kernels& isa, const float* q_row, int64_t position, int64_t split,
                const ref::KvCacheView& c, int64_t h0, int n, float* scores_all, int64_t key_begin,
                int64_t key_end, bool normalise, float* vmax, float* sums, float* const* out) {
  const OpParams& p = c.params;
  const int64_t hd = p.head_dim;
  const int64_t kv = h0 / (p.n_heads / p.n_kv_heads);
  const AttendedSpans attended = Attended(p, position);
  const KeyPieces pieces = PiecesOf(attended, split, key_begin, key_end);
  Pass pass;
  pass.n = n;
  pass.head_dim = hd;
  pass.scale = p.scale;
  float bias[kMaxHeads];
  for (int g = 0; g < n; ++g) {
    pass.q[g] = q_row + (h0 + g) * hd;
    pass.scores[g] = scores_all + (h0 + g) * p.cache_slots;
    pass.out[g] = out[g];
    vmax[g] = -INFINITY;
    bias[g] = 0.0f;
  }
  if (pieces.sinks.end > pieces.sinks.begin) {
    // The sinks' keys meet the query turned by (cache_position − position), as ref::Attention.
    float turned[kMaxHeads][kMaxQ4HeadDim];
    Pass sink_pass = pass;
    for (int g = 0; g < n; ++g) {
      ref::RotateQuery(pass.q[g], p, attended.cache_position - position, c.rope_factors, turned[g]);
      sink_pass.q[g] = turned[g];
    }
    Score(isa, c, kv, pieces.sinks, sink_pass, pieces.sinks_at, vmax);
  }
  Score(isa, c, kv, pieces.recent, pass, pieces.recent_at, vmax);
  for (int g = 0; g < n; ++g) {
    sums[g] = isa.exp_sum(pass.scores[g] + key_begin, key_end - key_begin, vmax[g]);
    for (int64_t d = 0; d < hd; ++d) pass.out[g][d] = 0.0f;
  }
  AddValues(isa, c, kv, pieces.sinks, pass, pieces.sinks_at, bias);
  AddValues(isa, c, kv, pieces.recent, pass, pieces.recent_at, bias);
  for (int g = 0; g < n; ++g) {
    const float inv_sum = normalise ? 1.0f / sums[g] : 1.0f;
    for (int64_t d = 0; d < hd; ++d) pass.out[g][d] = (pass.out[g][d] + bias[g]) * inv_sum;
  }
}

// Calls attend(h, n) for each pass over heads [head_begin, head_end): the heads from h that share
// its KV head, at most max_heads of them.
template <class Attend>
void ForEachPass(const Kernels& isa, const OpParams& p, int64_t head_begin, int64_t head_end,
                 Attend attend) {
  const int64_t group = p.n_heads / p.n_kv_heads;
  for (int64_t h = head_begin; h < head_end;) {
    const int64_t group_end = (h / group + 1) * group;
    const int n = static_cast<int>(Min(Min(group_end, head_end) - h, isa.max_heads));
    attend(h, n);
    h += n;
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
  const int64_t split = QuantizedEnd(p, first_position + rows);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t position = first_position + r;
    const int64_t keys = AttendedKeys(p, position);
    ForEachPass(isa, p, head_begin, head_end, [&](int64_t h, int n) {
      float vmax[kMaxHeads], sums[kMaxHeads];
      float* heads_out[kMaxHeads];
      for (int g = 0; g < n; ++g) heads_out[g] = out + r * width + (h + g) * p.head_dim;
      AttendPass(isa, q + r * width, position, split, cache, h, n, scores, 0, keys, true, vmax,
                 sums, heads_out);
    });
  }
}

void AttendPart(const Kernels& isa, const float* q_row, int64_t position,
                const ref::KvCacheView& cache, float* scores, int64_t head_begin, int64_t head_end,
                int64_t key_begin, int64_t key_end, float* parts, int64_t head_stride) {
  const OpParams& p = cache.params;
  const int64_t split = QuantizedEnd(p, position + 1);
  ForEachPass(isa, p, head_begin, head_end, [&](int64_t h, int n) {
    float vmax[kMaxHeads], sums[kMaxHeads];
    float* values[kMaxHeads];
    float* first = parts + (h - head_begin) * head_stride;
    for (int g = 0; g < n; ++g) values[g] = first + g * head_stride + 2;
    AttendPass(isa, q_row, position, split, cache, h, n, scores, key_begin, key_end, false, vmax,
               sums, values);
    for (int g = 0; g < n; ++g) {
      first[g * head_stride] = vmax[g];
      first[g * head_stride + 1] = sums[g];
    }
  });
}

}  // namespace staticlm::cpu::q4
