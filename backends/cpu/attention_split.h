// Decode attention split over the keys a query attends (flash-decoding). At decode depth a
// (row, KV-head group) is one task's whole cache read: Gemma 3 has a single KV head, so one core
// read a layer's cache while the other waited, and SmolLM2's three groups left a core idle a
// third of the time on two. A row that attends many keys is therefore computed as up to
// kMaxAttentionSplits parts over consecutive ranges of its keys, each part a task of its own that
// yields per head its largest score, Σ e^(score − max) and the unnormalised Σ e^(score − max)·v;
// the parts are then combined exactly as one softmax over all the keys would be, up to float
// rounding (MergeAttentionParts).
//
// How many parts depends only on how many keys the row attends, never on the threads: results
// stay the same for any thread count, and a row of a batched step gets the bits the same
// sequence gets alone.
#pragma once

#include <cstdint>

#include "backends/cpu/reference_kernels.h"

namespace staticlm::cpu {

constexpr int kMaxAttentionSplits = 8;
// Keys per part: enough that a part's fixed costs (preparing the queries, the merge) stay small
// beside its reads.
constexpr int64_t kKeysPerAttentionSplit = 256;
// Rows of one step whose splits a task table holds (the largest batch; limits refuse more).
constexpr int kMaxAttentionSplitRows = 64;

// The parts each of a row's `groups` KV-head groups is computed in when the row attends `keys`
// keys: one per kKeysPerAttentionSplit keys, at most kMaxAttentionSplits tasks a row in all
// (fewer, larger parts where there are several groups to share the threads), at least 1.
inline int AttentionSplits(int64_t keys, int64_t groups) {
  const int64_t most = groups >= kMaxAttentionSplits ? 1 : kMaxAttentionSplits / groups;
  const int64_t splits = (keys + kKeysPerAttentionSplit - 1) / kKeysPerAttentionSplit;
  return int(splits < 1 ? 1 : (splits > most ? most : splits));
}

// The first key (in score order: sinks, then the recent positions) of part `split` of `splits`.
inline int64_t AttentionSplitBegin(int64_t keys, int split, int splits) {
  return keys * split / splits;
}

// The keys a query at `position` attends under the layer's policy (sinks and recent positions).
int64_t AttendedKeys(const OpParams& p, int64_t position);

// Floats of one head's part: its max, its sum, then head_dim values.
inline int64_t AttentionPartFloats(int64_t head_dim) {
  return head_dim + 2;
}

// One row of one KV head's query heads [head_begin, head_end) over keys [key_begin, key_end) of
// those the row's query at `position` attends: head h's part (max, sum, values — in the cache's
// basis: a q8 cache's Hadamard rotation is undone by the merge) at parts + (h − head_begin) ·
// head_stride. scores_all: the op's scores rows, of which the part writes only its keys'.
// Run phase: no allocation.
using AttentionPartFn = void (*)(const float* q_row, int64_t position,
                                 const ref::KvCacheView& cache, float* scores_all,
                                 int64_t head_begin, int64_t head_end, int64_t key_begin,
                                 int64_t key_end, float* parts, int64_t head_stride);

// One head's output from its `splits` parts, part s at parts + s · AttentionPartFloats(hd):
// out = Σ_s e^(max_s − M) · values_s / Σ_s e^(max_s − M) · sum_s with M the largest max, then the
// Hadamard rotation back when `hadamard` (q8 caches). Run phase: no allocation.
void MergeAttentionParts(const float* parts, int splits, int64_t head_dim, bool hadamard,
                         float* out);

}  // namespace staticlm::cpu
