#include "tools/staticlm/bench_runner.h"

#include <cstring>

#include "platform/clock.h"

namespace staticlm::cli {
namespace {

staticlm_sampler GreedySampler() {
  staticlm_sampler s;
  staticlm_sampler_default(&s);
  s.temperature = 0;
  return s;
}

// Adds the context's op profile to `sum` (`*used` rows of kBenchOpRows), matching rows by op
// and weight type; rows past kBenchOpRows are dropped.
staticlm_status AddOpProfile(staticlm_context* ctx, staticlm_op_time* scratch,
                             staticlm_op_time* sum, size_t* used) {
  size_t n = 0;
  staticlm_status s = staticlm_op_profile(ctx, scratch, kBenchOpRows, &n);
  if (s != STATICLM_OK) return s;
  for (size_t i = 0; i < n && i < kBenchOpRows; ++i) {
    const staticlm_op_time& row = scratch[i];
    size_t j = 0;
    while (j < *used && (std::strcmp(sum[j].op, row.op) || std::strcmp(sum[j].weight, row.weight)))
      ++j;
    if (j == *used) {
      if (j == kBenchOpRows) continue;
      sum[j] = {row.op, row.weight, 0, 0, 0};
      ++*used;
    }
    sum[j].calls += row.calls;
    sum[j].seconds += row.seconds;
    sum[j].weight_bytes += row.weight_bytes;
  }
  return STATICLM_OK;
}

// Where a decode loop's op profile goes (recorded repetitions with --op-profile), else null.
struct OpSink {
  staticlm_op_time* scratch;
  staticlm_op_time* sum;
  size_t* used;
};

// From an empty cache: prefill the prompt and sample the first token; the prefill's op profile
// goes to `ops` when given.
staticlm_status MeasureFirstToken(staticlm_context* ctx, const BenchWorkload& w, BenchRep* rep,
                                  const OpSink* ops) {
  const staticlm_sampler greedy = GreedySampler();
  staticlm_reset(ctx);
  if (ops != nullptr) staticlm_reset_op_profile(ctx);
  double start = NowSeconds();
  staticlm_status s = staticlm_prefill(ctx, w.tokens, static_cast<size_t>(w.prompt_tokens));
  double prefilled = NowSeconds();
  int32_t token = 0;
  if (s == STATICLM_OK) s = staticlm_sample(ctx, &greedy, &token);
  double sampled = NowSeconds();
  rep->prefill_s = prefilled - start;
  rep->ttft_s = sampled - start;
  // Read after the clock, so that reading the profile is not counted as prefill time; the rows
  // are the prefill's alone (sampling, on the host or the device, is not timed).
  if (s == STATICLM_OK && ops != nullptr) s = AddOpProfile(ctx, ops->scratch, ops->sum, ops->used);
  return s;
}

// From an empty cache: prefill `depth` tokens (untimed), then time each of `gen_tokens`
// decode steps, feeding back the greedy token. At depth 0 the first step decodes tokens[0].
staticlm_status MeasureDecode(staticlm_context* ctx, const BenchWorkload& w, int32_t depth,
                              double* latency_s, double* total_s, double* sync_s,
                              CpuContention* contention, const OpSink* ops) {
  const staticlm_sampler greedy = GreedySampler();
  staticlm_reset(ctx);
  int32_t token = w.tokens[0];
  staticlm_status s = STATICLM_OK;
  if (depth > 0) {
    s = staticlm_prefill(ctx, w.tokens, static_cast<size_t>(depth));
    if (s == STATICLM_OK) s = staticlm_sample(ctx, &greedy, &token);
    if (s != STATICLM_OK) return s;
  }
  staticlm_reset_sync_seconds(ctx);
  if (ops != nullptr) staticlm_reset_op_profile(ctx);
  double total = 0;
  const CpuContention before = ReadCpuContention();
  for (int32_t i = 0; i < w.gen_tokens; ++i) {
    double start = NowSeconds();
    s = staticlm_decode(ctx, token);
    if (s == STATICLM_OK) s = staticlm_sample(ctx, &greedy, &token);
    double seconds = NowSeconds() - start;
    if (s != STATICLM_OK) return s;
    latency_s[i] = seconds;
    total += seconds;
  }
  *contention = CpuContentionBetween(before, ReadCpuContention());
  *total_s = total;
  *sync_s += staticlm_sync_seconds(ctx);
  if (ops != nullptr) return AddOpProfile(ctx, ops->scratch, ops->sum, ops->used);
  return STATICLM_OK;
}

// `results` is given for a recorded repetition with --op-profile, else null.
staticlm_status MeasureRep(staticlm_context* ctx, const BenchWorkload& w, BenchRep* rep,
                           double* latency_s, BenchResults* results) {
  OpSink prefill_sink{};
  if (results != nullptr) {
    prefill_sink = {results->op_scratch.data(), results->op_rows.data() + w.n_depths * kBenchOpRows,
                    &results->op_rows_used[w.n_depths]};
  }
  staticlm_status s = MeasureFirstToken(ctx, w, rep, results != nullptr ? &prefill_sink : nullptr);
  rep->sync_s = 0;
  for (size_t d = 0; s == STATICLM_OK && d < w.n_depths; ++d) {
    OpSink sink{};
    if (results != nullptr) {
      sink = {results->op_scratch.data(), results->op_rows.data() + d * kBenchOpRows,
              &results->op_rows_used[d]};
    }
    s = MeasureDecode(ctx, w, w.depths[d], latency_s + d * static_cast<size_t>(w.gen_tokens),
                      &rep->decode_s[d], &rep->sync_s, &rep->decode_contention[d],
                      results != nullptr ? &sink : nullptr);
  }
  return s;
}

}  // namespace

void AllocateBenchResults(const BenchWorkload& w, BenchResults* results) {
  results->reps.assign(static_cast<size_t>(w.reps), BenchRep{});
  for (BenchRep& rep : results->reps) {
    rep.decode_s.assign(w.n_depths, 0.0);
    rep.decode_contention.assign(w.n_depths, CpuContention{});
  }
  results->latency_s.assign(
      static_cast<size_t>(w.reps) * w.n_depths * static_cast<size_t>(w.gen_tokens), 0.0);
  if (w.op_profile) {
    results->op_rows.assign((w.n_depths + 1) * kBenchOpRows, staticlm_op_time{});
    results->op_rows_used.assign(w.n_depths + 1, 0);
    results->op_scratch.assign(kBenchOpRows, staticlm_op_time{});
  }
}

staticlm_status RunBench(staticlm_context* ctx, const BenchWorkload& w, BenchResults* results) {
  const size_t rep_stride = w.n_depths * static_cast<size_t>(w.gen_tokens);
  // Warm-up repetitions write into the first repetition's storage, which is measured after.
  for (int32_t i = 0; i < w.warmup; ++i) {
    staticlm_status s = MeasureRep(ctx, w, &results->reps[0], results->latency_s.data(), nullptr);
    if (s != STATICLM_OK) return s;
  }
  for (int32_t r = 0; r < w.reps; ++r) {
    staticlm_status s = MeasureRep(ctx, w, &results->reps[static_cast<size_t>(r)],
                                   results->latency_s.data() + static_cast<size_t>(r) * rep_stride,
                                   w.op_profile ? results : nullptr);
    if (s != STATICLM_OK) return s;
  }
  staticlm_reset(ctx);
  return STATICLM_OK;
}

}  // namespace staticlm::cli
