// The C API's batched-sequence calls (include/staticlm/staticlm.h, "Batched sequences"): each
// forwards to the engine with a sequence id; the engine checks the id. NULLs as in
// staticlm_c.cpp (include/staticlm/staticlm.h, "NULL arguments").
#include "runtime/capi/capi_context.h"
#include "staticlm/staticlm.h"

using staticlm::Status;
using staticlm::StatusCode;
using staticlm::capi::NullArgument;
using staticlm::capi::Record;

staticlm_status staticlm_seq_prefill(staticlm_context* context, int32_t sequence,
                                     const int32_t* tokens, size_t n_tokens) {
  if (context == nullptr) return STATICLM_INVALID_ARGUMENT;
  if (tokens == nullptr) return NullArgument(context, "tokens");
  return Record(context, context->engine.Prefill(tokens, n_tokens, sequence));
}

staticlm_status staticlm_decode_batch(staticlm_context* context, const int32_t* sequences,
                                      const int32_t* tokens, size_t n) {
  if (context == nullptr) return STATICLM_INVALID_ARGUMENT;
  if ((sequences == nullptr || tokens == nullptr) && n > 0) {
    return NullArgument(context, "sequences or tokens");
  }
  return Record(context, context->engine.DecodeBatch(sequences, tokens, n));
}

const float* staticlm_seq_logits(const staticlm_context* context, int32_t sequence) {
  if (context == nullptr) return nullptr;
  return context->engine.logits(sequence);
}

staticlm_status staticlm_seq_sample(staticlm_context* context, int32_t sequence,
                                    const staticlm_sampler* sampler, int32_t* token) {
  if (context == nullptr) return STATICLM_INVALID_ARGUMENT;
  if (sampler == nullptr || token == nullptr) return NullArgument(context, "sampler or token");
  return Record(context,
                context->engine.Sample(staticlm::capi::ToSamplerParams(*sampler), token, sequence));
}

staticlm_status staticlm_seq_seed(staticlm_context* context, int32_t sequence, uint64_t seed) {
  if (context == nullptr) return STATICLM_INVALID_ARGUMENT;
  return Record(context, context->engine.SeedSequence(sequence, seed));
}

staticlm_status staticlm_seq_reset(staticlm_context* context, int32_t sequence) {
  if (context == nullptr) return STATICLM_INVALID_ARGUMENT;
  return Record(context, context->engine.ResetSequence(sequence));
}

int32_t staticlm_seq_position(const staticlm_context* context, int32_t sequence) {
  if (context == nullptr) return -1;
  return context->engine.position(sequence);
}

const int32_t* staticlm_seq_history(const staticlm_context* context, int32_t sequence,
                                    size_t* n_tokens) {
  if (n_tokens == nullptr) return nullptr;
  if (context == nullptr) {
    *n_tokens = 0;
    return nullptr;
  }
  return context->engine.history(n_tokens, sequence);
}

staticlm_status staticlm_seq_token_to_text(staticlm_context* context, int32_t sequence,
                                           int32_t token, char* out, size_t capacity,
                                           size_t* n_bytes) {
  if (context == nullptr) return STATICLM_INVALID_ARGUMENT;
  if (n_bytes == nullptr) return NullArgument(context, "n_bytes");
  *n_bytes = 0;
  if (out == nullptr && capacity > 0) return NullArgument(context, "out");
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
  if (context == nullptr || (out == nullptr && capacity > 0)) return 0;
  staticlm::Detokenizer* d = context->engine.detokenizer(sequence);
  return d == nullptr ? 0 : d->Flush(out, capacity);
}

staticlm_status staticlm_seq_snapshot_save(staticlm_context* context, int32_t sequence,
                                           int32_t slot) {
  if (context == nullptr) return STATICLM_INVALID_ARGUMENT;
  return Record(context, context->engine.SaveSnapshot(slot, sequence));
}

staticlm_status staticlm_seq_snapshot_restore(staticlm_context* context, int32_t slot,
                                              int32_t sequence) {
  if (context == nullptr) return STATICLM_INVALID_ARGUMENT;
  return Record(context, context->engine.RestoreSnapshot(slot, sequence));
}

staticlm_status staticlm_seq_session_save(staticlm_context* context, int32_t sequence,
                                          const char* path) {
  if (context == nullptr) return STATICLM_INVALID_ARGUMENT;
  if (path == nullptr) return NullArgument(context, "path");
  return Record(context, context->engine.SaveSession(path, sequence));
}

staticlm_status staticlm_seq_session_load(staticlm_context* context, int32_t sequence,
                                          const char* path) {
  if (context == nullptr) return STATICLM_INVALID_ARGUMENT;
  if (path == nullptr) return NullArgument(context, "path");
  return Record(context, context->engine.LoadSession(path, sequence));
}
