// The C API's batched-sequence calls (include/staticlm/staticlm.h, "Batched sequences"): each
// forwards to the engine with a sequence id; the engine checks the id.
#include "runtime/capi/capi_context.h"
#include "staticlm/staticlm.h"

using staticlm::Status;
using staticlm::StatusCode;
using staticlm::capi::Record;

staticlm_status staticlm_seq_prefill(staticlm_context* context, int32_t sequence,
                                     const int32_t* tokens, size_t n_tokens) {
  if (tokens == nullptr) {
    return Record(context, Status::Error(StatusCode::kInvalidArgument, "tokens are NULL"));
  }
  return Record(context, context->engine.Prefill(tokens, n_tokens, sequence));
}

staticlm_status staticlm_decode_batch(staticlm_context* context, const int32_t* sequences,
                                      const int32_t* tokens, size_t n) {
  return Record(context, context->engine.DecodeBatch(sequences, tokens, n));
}

const float* staticlm_seq_logits(const staticlm_context* context, int32_t sequence) {
  return context->engine.logits(sequence);
}

staticlm_status staticlm_seq_sample(staticlm_context* context, int32_t sequence,
                                    const staticlm_sampler* sampler, int32_t* token) {
  if (sampler == nullptr || token == nullptr) {
    return Record(context, Status::Error(StatusCode::kInvalidArgument, "sampler or token is NULL"));
  }
  return Record(context,
                context->engine.Sample(staticlm::capi::ToSamplerParams(*sampler), token, sequence));
}

staticlm_status staticlm_seq_seed(staticlm_context* context, int32_t sequence, uint64_t seed) {
  return Record(context, context->engine.SeedSequence(sequence, seed));
}

staticlm_status staticlm_seq_reset(staticlm_context* context, int32_t sequence) {
  return Record(context, context->engine.ResetSequence(sequence));
}

int32_t staticlm_seq_position(const staticlm_context* context, int32_t sequence) {
  return context->engine.position(sequence);
}

const int32_t* staticlm_seq_history(const staticlm_context* context, int32_t sequence,
                                    size_t* n_tokens) {
  return context->engine.history(n_tokens, sequence);
}

staticlm_status staticlm_seq_token_to_text(staticlm_context* context, int32_t sequence,
                                           int32_t token, char* out, size_t capacity,
                                           size_t* n_bytes) {
  *n_bytes = 0;
  staticlm::Detokenizer* d = context->engine.detokenizer(sequence);
  if (d == nullptr) {
    return Record(
        context, Status::Error(StatusCode::kInvalidArgument, "sequence id outside 0..max_batch-1"));
  }
  const staticlm::Status& text_status = context->engine.model().text_status();
  if (!text_status.ok()) return Record(context, text_status);
  return Record(context, d->Push(context->engine.tokenizer(), token, out, capacity, n_bytes));
}

size_t staticlm_seq_flush_text(staticlm_context* context, int32_t sequence, char* out,
                               size_t capacity) {
  staticlm::Detokenizer* d = context->engine.detokenizer(sequence);
  return d == nullptr ? 0 : d->Flush(out, capacity);
}

staticlm_status staticlm_seq_snapshot_save(staticlm_context* context, int32_t sequence,
                                           int32_t slot) {
  return Record(context, context->engine.SaveSnapshot(slot, sequence));
}

staticlm_status staticlm_seq_snapshot_restore(staticlm_context* context, int32_t slot,
                                              int32_t sequence) {
  return Record(context, context->engine.RestoreSnapshot(slot, sequence));
}

staticlm_status staticlm_seq_session_save(staticlm_context* context, int32_t sequence,
                                          const char* path) {
  return Record(context, context->engine.SaveSession(path, sequence));
}

staticlm_status staticlm_seq_session_load(staticlm_context* context, int32_t sequence,
                                          const char* path) {
  return Record(context, context->engine.LoadSession(path, sequence));
}
