// Engine: init — loading the model, building the program, sizing and allocating the parts.
#include "runtime/engine/engine.h"

namespace staticlm {

Status Engine::Load(const char* model_path, const EngineLimits& limits) {
  STATICLM_RETURN_IF_ERROR(program_.SetLimits(limits));
  STATICLM_RETURN_IF_ERROR(model_.Load(
      model_path, static_cast<size_t>(program_.limits().max_prompt_bytes), limits.quantize));
  STATICLM_RETURN_IF_ERROR(program_.Build(model_));
  ComputeMemoryReport();
  return Status::Ok();
}

Sequences::Shape Engine::SequencesShape() const {
  Sequences::Shape shape;
  shape.count = program_.limits().max_batch;
  shape.max_context = program_.limits().max_context;
  shape.vocab = model_.config().vocab_size;
  shape.ring = program_.positions_unbounded();
  return shape;
}

void Engine::ComputeMemoryReport() {
  program_.ReportBuffers(&memory_);
  const int32_t vocab = model_.config().vocab_size;
  memory_.host_bytes = Sequences::HostBytes(SequencesShape()) + model_.tokenizer().ScratchBytes() +
                       Sampler::ScratchBytes(vocab);
  memory_.snapshot_bytes = SessionStore::Bytes(program_.limits().max_snapshots, SequenceKvBytes(),
                                               program_.limits().max_context, vocab);
  memory_.total_bytes = memory_.weights_bytes + memory_.packed_weights_bytes +
                        memory_.kv_cache_bytes + memory_.arena_bytes + memory_.io_bytes +
                        memory_.host_bytes + memory_.snapshot_bytes;
}

// A refused allocation says what the whole context needs, and where the parts are listed, so
// the user can choose smaller limits without guessing.
Status Engine::OutOfMemory(const Status& refused) const {
  if (refused.code() != StatusCode::kOutOfMemory) return refused;
  return Status::Error(StatusCode::kOutOfMemory,
                       "%s: this context needs %.1f MiB in all (staticlm inspect with the same "
                       "limits lists the parts; a smaller --ctx or --batch, --kv q8 or q4, or "
                       "--window needs less)",
                       refused.message(), memory_.total_bytes / 1048576.0);
}

Status Engine::Allocate() {
  Status s = program_.Allocate();
  if (s.ok()) s = sequences_.Allocate(SequencesShape(), program_.io_logits(0));
  if (s.ok()) s = sampler_.Init(model_.config().vocab_size);
  if (s.ok()) s = InitSessionStore();
  if (!s.ok()) return OutOfMemory(s);

  // Warm-up: one step touches every weight page and every code path once, so the first real
  // token does not pay for page faults. Its cache slot is overwritten before it is ever read.
  // Both plans are warmed up (a one-token decode step, then a two-token prefill step).
  const int32_t warm_tokens[2] = {0, 0};
  STATICLM_RETURN_IF_ERROR(RunChunk(0, warm_tokens, 1));
  if (program_.n_plans() > 1 && program_.limits().max_context >= 3) {
    STATICLM_RETURN_IF_ERROR(RunChunk(0, warm_tokens, 2));
  }
  Reset();
  return Status::Ok();
}

}  // namespace staticlm
