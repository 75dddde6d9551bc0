#version 450
// Top-k sampling with temperature on the device, as Sampler does it for top-k (no penalty),
// then top-p and min-p: the k highest logits (exactly k, ties to the lower id) in descending
// order, weights exp((s − s_max) / T), the shortest prefix reaching top_p of their total, the
// weights ≥ min_p, and the inverse-CDF pick of u · Σw over those (u drawn by the host from the
// sequence's generator). One workgroup of WG invocations:
//  1. radix select: four passes of 8-bit digits over the keys (sample_keys.glsl), each a
//     shared-memory histogram of the keys matching the digits found so far, find the k-th key
//     T and how many keys equal to T are needed; the first pass also checks the logits;
//  2. collect: keys above T from anywhere (an atomic slot), keys equal to T by rank of id
//     (each invocation owns a contiguous run of ids; a scan of their counts orders them);
//  3. a bitonic sort of the ≤ KMAX candidates, then the filters, weights and the pick by one
//     invocation.
// k must be in 1 … min(vocab, KMAX); the host checks. See sample_keys.glsl for the bindings.
#include "common.glsl"
#include "sample_keys.glsl"
#define WG 256u
#define KMAX 256u
layout(local_size_x = 256) in;

shared uint hist[256];
shared uint s_prefix, s_mask, s_need, s_flags, s_above;
shared uint run_ties[WG];
shared uint cand_key[KMAX];
shared uint cand_id[KMAX];

uint radix_select(uint t, uint vocab, uint base) {
  for (int pass = 0; pass < 4; ++pass) {
    const uint shift = uint(24 - 8 * pass);
    hist[t] = 0u;
    barrier();
    const uint prefix = s_prefix, mask = s_mask;
    uint flags = 0u;
    for (uint i = t; i < vocab; i += WG) {
      const uint bits = b0[base + i];
      if (pass == 0) flags |= bad_logit(bits) ? 1u : (bits != NEG_INF_BITS ? 2u : 0u);
      const uint key = logit_key(bits);
      if ((key & mask) == prefix) atomicAdd(hist[(key >> shift) & 255u], 1u);
    }
    if (flags != 0u) atomicOr(s_flags, flags);
    barrier();
    if (t == 0u) {
      // From the highest digit down: the bin where the k-th key falls.
      uint need = s_need, bin = 255u;
      while (bin > 0u && need > hist[bin]) {
        need -= hist[bin];
        --bin;
      }
      s_need = need;
      s_prefix = prefix | (bin << shift);
      s_mask = mask | (255u << shift);
    }
    barrier();
    if (pass == 0) {  // s_flags is final and the same for every invocation: a uniform exit
      if ((s_flags & 1u) != 0u) return 1u;
      if ((s_flags & 2u) == 0u) return 2u;
    }
  }
  return 0u;
}

// Candidates: every key above T, then the s_need lowest ids whose key is T.
void collect(uint t, uint vocab, uint base, uint k) {
  const uint threshold = s_prefix, need = s_need, above = k - need;
  const uint run = (vocab + WG - 1u) / WG;
  const uint lo = min(t * run, vocab), hi = min(lo + run, vocab);
  uint ties = 0u;
  for (uint i = lo; i < hi; ++i) {
    const uint key = logit_key(b0[base + i]);
    if (key > threshold) {
      const uint slot = atomicAdd(s_above, 1u);
      cand_key[slot] = key;
      cand_id[slot] = i;
    } else if (key == threshold) {
      ++ties;
    }
  }
  run_ties[t] = ties;
  barrier();
  if (t == 0u) {
    uint sum = 0u;
    for (uint i = 0u; i < WG; ++i) {
      const uint c = run_ties[i];
      run_ties[i] = sum;
      sum += c;
    }
  }
  barrier();
  uint rank = run_ties[t];
  for (uint i = lo; i < hi && rank < need; ++i) {
    if (logit_key(b0[base + i]) == threshold) {
      cand_key[above + rank] = threshold;
      cand_id[above + rank] = i;
      ++rank;
    }
  }
  barrier();
}

// Sorts cand_* into the host's order (key descending, id ascending); padding sorts last.
void bitonic_sort(uint t) {
  for (uint size = 2u; size <= KMAX; size <<= 1) {
    for (uint stride = size >> 1; stride > 0u; stride >>= 1) {
      const uint j = t ^ stride;
      if (t < KMAX && j > t) {
        const bool forward = (t & size) == 0u;
        const bool j_first = ranks_before(cand_key[j], cand_id[j], cand_key[t], cand_id[t]);
        if (j_first == forward) {
          const uint key = cand_key[t], id = cand_id[t];
          cand_key[t] = cand_key[j];
          cand_id[t] = cand_id[j];
          cand_key[j] = key;
          cand_id[j] = id;
        }
      }
      barrier();
    }
  }
}

float weight(uint key, float top, float temperature) {
  return key == logit_key(NEG_INF_BITS) ? 0.0 : exp((key_value(key) - top) / temperature);
}

// How many of the k sorted candidates top-p keeps, as Sampler::ApplyTopP: the shortest prefix
// whose weight reaches top_p · the total of all k, at least one; k when top_p is 1.
uint top_p_count(uint k, float top, float temperature, float top_p) {
  if (!(top_p < 1.0)) return k;
  float total = 0.0;
  for (uint i = 0u; i < k; ++i) total += weight(cand_key[i], top, temperature);
  const float limit = top_p * total;
  float before = 0.0;
  uint kept = 0u;
  while (kept < k && (kept == 0u || before < limit)) {
    before += weight(cand_key[kept], top, temperature);
    ++kept;
  }
  return kept;
}

// Sampler::ComputeWeights, ApplyTopP, ApplyMinP (weights ≥ min_p, the best's being 1) then
// Sampler::Draw over the sorted candidates (in float here, where the host sums in double: a
// u·Σw or top_p·Σw within rounding of a boundary may pick the neighbour).
uint pick(uint k, float temperature, float top_p, float min_p, float u) {
  const float top = key_value(cand_key[0]);
  const uint n = top_p_count(k, top, temperature, top_p);
  float total = 0.0;
  for (uint i = 0u; i < n; ++i) {
    const float w = weight(cand_key[i], top, temperature);
    if (w >= min_p) total += w;
  }
  const float threshold = u * total;
  float cumulative = 0.0;
  uint last_positive = 0u;
  for (uint i = 0u; i < n; ++i) {
    const float w = weight(cand_key[i], top, temperature);
    if (w <= 0.0 || !(w >= min_p)) continue;
    cumulative += w;
    last_positive = i;
    if (threshold < cumulative) return cand_id[i];
  }
  return cand_id[last_positive];
}

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint vocab = pc.a;
  const uint row = min(b1[pc.base1 + SAMPLE_ROW], pc.b - 1u);
  const uint k = clamp(b1[pc.base1 + SAMPLE_K], 1u, min(vocab, KMAX));
  const uint base = pc.base0 + row * vocab;
  if (t == 0u) {
    s_prefix = 0u;
    s_mask = 0u;
    s_need = k;
    s_flags = 0u;
    s_above = 0u;
  }
  if (t < KMAX) {
    cand_key[t] = 0u;
    cand_id[t] = 0xFFFFFFFFu;
  }
  barrier();
  const uint problem = radix_select(t, vocab, base);
  if (problem != 0u) {
    if (t == 0u) {
      b1[pc.base1 + SAMPLE_OUT] = problem == 1u ? SAMPLE_BAD_LOGITS : SAMPLE_ALL_NEG_INF;
    }
    return;
  }
  collect(t, vocab, base, k);
  bitonic_sort(t);
  if (t == 0u) {
    const float temperature = uintBitsToFloat(b1[pc.base1 + SAMPLE_TEMPERATURE]);
    const float u = uintBitsToFloat(b1[pc.base1 + SAMPLE_U]);
    const float top_p = uintBitsToFloat(b1[pc.base1 + SAMPLE_TOP_P]);
    const float min_p = uintBitsToFloat(b1[pc.base1 + SAMPLE_MIN_P]);
    b1[pc.base1 + SAMPLE_OUT] = pick(k, temperature, top_p, min_p, u);
  }
}
