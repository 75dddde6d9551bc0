#include "tools/staticlm/bench_runner.h"

#include "platform/clock.h"

namespace staticlm::cli {
namespace {

staticlm_sampler GreedySampler() {
  staticlm_sampler s;
  staticlm_sampler_default(&s);
  s.temperature = 0;
  return s;
}

// From an empty cache: prefill the prompt and sample the first token.
staticlm_status MeasureFirstToken(staticlm_context* ctx, const BenchWorkload& w, BenchRep* rep) {
  const staticlm_sampler greedy = GreedySampler();
  staticlm_reset(ctx);
  double start = NowSeconds();
  staticlm_status s = staticlm_prefill(ctx, w.tokens, static_cast<size_t>(w.prompt_tokens));
  double prefilled = NowSeconds();
  int32_t token = 0;
  if (s == STATICLM_OK) s = staticlm_sample(ctx, &greedy, &token);
  double sampled = NowSeconds();
  rep->prefill_s = prefilled - start;
  rep->ttft_s = sampled - start;
  return s;
}

// From an empty cache: prefill `depth` tokens (untimed), then time each of `gen_tokens`
// decode steps, feeding back the greedy token. At depth 0 the first step decodes tokens[0].
staticlm_status MeasureDecode(staticlm_context* ctx, const BenchWorkload& w, int32_t depth,
                              double* latency_s, double* total_s, double* sync_s) {
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
  double total = 0;
  for (int32_t i = 0; i < w.gen_tokens; ++i) {
    double start = NowSeconds();
    s = staticlm_decode(ctx, token);
    if (s == STATICLM_OK) s = staticlm_sample(ctx, &greedy, &token);
    double seconds = NowSeconds() - start;
    if (s != STATICLM_OK) return s;
    latency_s[i] = seconds;
    total += seconds;
  }
  *total_s = total;
  *sync_s += staticlm_sync_seconds(ctx);
  return STATICLM_OK;
}

staticlm_status MeasureRep(staticlm_context* ctx, const BenchWorkload& w, BenchRep* rep,
                           double* latency_s) {
  staticlm_status s = MeasureFirstToken(ctx, w, rep);
  rep->sync_s = 0;
  for (size_t d = 0; s == STATICLM_OK && d < w.n_depths; ++d) {
    s = MeasureDecode(ctx, w, w.depths[d], latency_s + d * static_cast<size_t>(w.gen_tokens),
                      &rep->decode_s[d], &rep->sync_s);
  }
  return s;
}

}  // namespace

void AllocateBenchResults(const BenchWorkload& w, BenchResults* results) {
  results->reps.assign(static_cast<size_t>(w.reps), BenchRep{});
  for (BenchRep& rep : results->reps) rep.decode_s.assign(w.n_depths, 0.0);
  results->latency_s.assign(
      static_cast<size_t>(w.reps) * w.n_depths * static_cast<size_t>(w.gen_tokens), 0.0);
}

staticlm_status RunBench(staticlm_context* ctx, const BenchWorkload& w, BenchResults* results) {
  const size_t rep_stride = w.n_depths * static_cast<size_t>(w.gen_tokens);
  // Warm-up repetitions write into the first repetition's storage, which is measured after.
  for (int32_t i = 0; i < w.warmup; ++i) {
    staticlm_status s = MeasureRep(ctx, w, &results->reps[0], results->latency_s.data());
    if (s != STATICLM_OK) return s;
  }
  for (int32_t r = 0; r < w.reps; ++r) {
    staticlm_status s = MeasureRep(ctx, w, &results->reps[static_cast<size_t>(r)],
                                   results->latency_s.data() + static_cast<size_t>(r) * rep_stride);
    if (s != STATICLM_OK) return s;
  }
  staticlm_reset(ctx);
  return STATICLM_OK;
}

}  // namespace staticlm::cli
