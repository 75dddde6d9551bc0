// `staticlm batch`: many prompts through one context of max_batch sequences. Up to --batch
// prompts decode together, one token each per step; when one ends, the next waiting prompt takes
// its slot (staticlm_seq_reset), the others going on undisturbed. Each finished generation is
// printed as "[i] text" in the order the prompts were given, then a line of figures.
#include <cstdio>
#include <cstring>
#include <memory>

#include "platform/alloc_counter.h"
#include "platform/clock.h"
#include "platform/process_stats.h"
#include "tools/staticlm/cli_options.h"
#include "tools/staticlm/commands.h"
#include "tools/staticlm/generation.h"
#include "tools/staticlm/heap_counts.h"

namespace staticlm::cli {
namespace {

constexpr size_t kTextBytesPerToken = 64;

// One prompt's generation, and the slot (sequence) it runs in.
struct Job {
  int32_t sequence = -1;
  int32_t next = 0;  // the sampled token to decode next
  int32_t generated = 0;
  bool done = false;
  size_t text_bytes = 0;
};

struct BatchBuffers {
  std::unique_ptr<int32_t[]> tokens;  // one prompt at a time
  std::unique_ptr<char[]> text;       // per prompt, max_tokens · kTextBytesPerToken bytes
  size_t token_capacity = 0, text_capacity = 0;
  int32_t seqs[64] = {};
  int32_t next[64] = {};
};

char* TextOf(BatchBuffers* b, int job) {
  return b->text.get() + static_cast<size_t>(job) * b->text_capacity;
}

// Appends a token's text (complete characters) to the job's text.
staticlm_status AppendText(staticlm_context* ctx, BatchBuffers* b, int i, Job* job, int32_t token) {
  size_t n = 0;
  char* out = TextOf(b, i) + job->text_bytes;
  staticlm_status s = staticlm_seq_token_to_text(ctx, job->sequence, token, out,
                                                 b->text_capacity - job->text_bytes, &n);
  job->text_bytes += n;
  return s;
}

// Samples the job's next token; ends it on an end-of-generation token or its budget.
staticlm_status Advance(staticlm_context* ctx, const Options& o, BatchBuffers* b, int i, Job* job) {
  int32_t token = 0;
  staticlm_status s = staticlm_seq_sample(ctx, job->sequence, &o.sampler, &token);
  if (s != STATICLM_OK) return s;
  if (staticlm_is_end_of_generation(ctx, token) || job->generated == o.max_tokens) {
    job->done = true;
    job->text_bytes += staticlm_seq_flush_text(ctx, job->sequence, TextOf(b, i) + job->text_bytes,
                                               b->text_capacity - job->text_bytes);
    return STATICLM_OK;
  }
  ++job->generated;
  job->next = token;
  return AppendText(ctx, b, i, job, token);
}

// Starts job i in `sequence`: reset the slot, prefill the prompt, sample the first token.
staticlm_status Start(staticlm_context* ctx, const Options& o, BatchBuffers* b, int i, Job* job,
                      int32_t sequence) {
  job->sequence = sequence;
  staticlm_status s = staticlm_seq_reset(ctx, sequence);
  size_t n = 0;
  const char* prompt = o.prompts[i];
  if (s == STATICLM_OK) {
    s = staticlm_tokenize(ctx, prompt, std::strlen(prompt), 1, b->tokens.get(), b->token_capacity,
                          &n);
  }
  if (s == STATICLM_OK && n == 0) return STATICLM_INVALID_ARGUMENT;
  if (s == STATICLM_OK) s = staticlm_seq_prefill(ctx, sequence, b->tokens.get(), n);
  return s == STATICLM_OK ? Advance(ctx, o, b, i, job) : s;
}

// The generation loop: fill free slots with waiting prompts, decode one batched step.
staticlm_status RunJobs(staticlm_context* ctx, const Options& o, BatchBuffers* b, Job* jobs,
                        size_t* decoded) {
  const int n_jobs = o.n_prompts;
  const int32_t batch = o.limits.max_batch;
  int next_job = 0;
  for (;;) {
    size_t n = 0;
    for (int32_t slot = 0; slot < batch; ++slot) {
      int owner = -1;
      for (int i = 0; i < next_job; ++i)
        owner = !jobs[i].done && jobs[i].sequence == slot ? i : owner;
      while (owner < 0 && next_job < n_jobs) {
        const int i = next_job++;
        staticlm_status s = Start(ctx, o, b, i, &jobs[i], slot);
        if (s != STATICLM_OK) return s;
        if (!jobs[i].done) owner = i;
      }
      if (owner < 0) continue;
      b->seqs[n] = slot;
      b->next[n++] = jobs[owner].next;
    }
    if (n == 0) return STATICLM_OK;
    staticlm_status s = staticlm_decode_batch(ctx, b->seqs, b->next, n);
    if (s != STATICLM_OK) return s;
    *decoded += n;
    for (int i = 0; i < next_job; ++i) {
      if (jobs[i].done) continue;
      s = Advance(ctx, o, b, i, &jobs[i]);
      if (s != STATICLM_OK) return s;
    }
  }
}

}  // namespace

int BatchCommand(int argc, char** argv) {
  Options o;
  if (!ParseOptions(argc, argv, 2, &o)) return 2;
  if (o.n_prompts == 0) {
    std::fprintf(stderr, "staticlm: batch needs at least one --prompt\n");
    return 2;
  }
  if (o.max_tokens < 1) {
    std::fprintf(stderr, "staticlm: --max-tokens must be at least 1\n");
    return 2;
  }
  staticlm_context* ctx = CreateContextOrReport(o.model, o.limits);
  if (ctx == nullptr) return 1;
  BatchBuffers b;
  b.token_capacity = static_cast<size_t>(o.limits.max_prompt_bytes) + 1;
  b.tokens.reset(new int32_t[b.token_capacity]);
  b.text_capacity = static_cast<size_t>(o.max_tokens) * kTextBytesPerToken + 8;
  b.text.reset(new char[b.text_capacity * static_cast<size_t>(o.n_prompts)]);
  std::unique_ptr<Job[]> jobs(new Job[static_cast<size_t>(o.n_prompts)]);
  staticlm_seed(ctx, o.seed);

  alloc_counter::Start();  // from here on: the run phase
  size_t decoded = 0;
  const double start = NowSeconds();
  staticlm_status s = RunJobs(ctx, o, &b, jobs.get(), &decoded);
  const double seconds = NowSeconds() - start;
  alloc_counter::Stop();
  if (s != STATICLM_OK) {
    std::fprintf(stderr, "staticlm: %s\n", staticlm_last_error(ctx));
    staticlm_destroy(ctx);
    return 1;
  }
  for (int i = 0; i < o.n_prompts; ++i) {
    std::printf("[%d] %.*s\n", i, static_cast<int>(jobs[i].text_bytes), TextOf(&b, i));
  }
  staticlm_memory memory;
  staticlm_get_memory(ctx, &memory);
  std::fprintf(stderr,
               "[staticlm] prompts=%d batch=%d decoded_tokens=%zu time=%.2f s "
               "throughput=%.1f tok/s planned=%llu bytes peak_rss=%llu bytes",
               o.n_prompts, o.limits.max_batch, decoded, seconds,
               seconds > 0 ? static_cast<double>(decoded) / seconds : 0.0,
               static_cast<unsigned long long>(memory.total_bytes),
               static_cast<unsigned long long>(PeakRssBytes()));
  PrintHeapCounts(stderr, ReadHeapCounts());
  std::fputc('\n', stderr);
  staticlm_destroy(ctx);
  return 0;
}

}  // namespace staticlm::cli
