// Engine: snapshots (copies of the conversation in slots sized at init) and session files (the
// same on disk). Everything here is run phase: it never allocates; the session calls do file
// I/O through the staging buffer and the caller's path. InitSessionStore alone is init.
#include <cmath>
#include <cstring>

#include "runtime/engine/engine.h"

namespace staticlm {
namespace {

Status NotAllocated() {
  return Status::Error(StatusCode::kInvalidState, "not allocated");
}

// Copies the cache regions of a sequence's conversation at `position` into packed host memory.
Status ReadKv(BufferAccess* backend, const CacheRegions& layout, int64_t position, int32_t sequence,
              uint8_t* dst) {
  for (size_t i = 0; i < layout.RegionCount(); ++i) {
    KvRegion r = layout.Region(i, position, sequence);
    STATICLM_RETURN_IF_ERROR(backend->ReadBuffer(BufferId::kKvCache, r.offset, r.bytes, dst));
    dst += r.bytes;
  }
  return Status::Ok();
}

Status WriteKv(BufferAccess* backend, const CacheRegions& layout, int64_t position,
               int32_t sequence, const uint8_t* src) {
  for (size_t i = 0; i < layout.RegionCount(); ++i) {
    KvRegion r = layout.Region(i, position, sequence);
    STATICLM_RETURN_IF_ERROR(backend->WriteBuffer(BufferId::kKvCache, r.offset, r.bytes, src));
    src += r.bytes;
  }
  return Status::Ok();
}

size_t Smaller(uint64_t a, size_t b) {
  return a < b ? static_cast<size_t>(a) : b;
}

}  // namespace

Status Engine::InitSessionStore() {
  const EngineLimits& limits = program_.limits();
  const bool static_policy = limits.window == 0 && limits.sinks == 0;
  STATICLM_RETURN_IF_ERROR(session_.cache_regions.Init(program_.plan(program_.n_plans() - 1),
                                                       memory_.kv_cache_bytes, static_policy));
  session_.plan_hash = program_.PlansHash();
  STATICLM_RETURN_IF_ERROR(session_.snapshots.Allocate(limits.max_snapshots, SequenceKvBytes(),
                                                       limits.max_context, config().vocab_size));
  return session_.staging.Allocate(SessionStore::kStagingBytes, 64, "the session staging buffer");
}

Status Engine::SaveSnapshot(int32_t slot, int32_t sequence) {
  if (!allocated()) return NotAllocated();
  if (!ValidSequence(sequence)) return NoSuchSequence();
  STATICLM_RETURN_IF_ERROR(FetchHostLogits(sequence));
  const Sequence& q = sequences_.at(sequence);
  Snapshot* s = session_.snapshots.slot(slot);
  if (s == nullptr) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "snapshot slot out of range (max_snapshots)");
  }
  s->used = false;
  STATICLM_RETURN_IF_ERROR(ReadKv(backend(), session_.cache_regions, q.position, sequence, s->kv));
  std::memcpy(s->history, sequences_.ring(sequence),
              sizeof(int32_t) * size_t(program_.limits().max_context));
  if (q.have_logits) {
    std::memcpy(s->logits, sequences_.logits(sequence),
                sizeof(float) * size_t(config().vocab_size));
  }
  s->position = q.position;
  s->have_logits = q.have_logits;
  s->n_pending = static_cast<uint32_t>(q.detokenizer.CopyPending(s->pending));
  s->used = true;
  return Status::Ok();
}

Status Engine::RestoreSnapshot(int32_t slot, int32_t sequence) {
  if (!allocated()) return NotAllocated();
  if (!ValidSequence(sequence)) return NoSuchSequence();
  Sequence& q = sequences_.at(sequence);
  Snapshot* s = session_.snapshots.slot(slot);
  if (s == nullptr) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "snapshot slot out of range (max_snapshots)");
  }
  if (!s->used) return Status::Error(StatusCode::kInvalidState, "snapshot slot is empty");
  Status written = WriteKv(backend(), session_.cache_regions, s->position, sequence, s->kv);
  if (!written.ok()) {
    (void)ResetSequence(sequence);  // part of its cache may be overwritten: it is gone
    return written;
  }
  std::memcpy(sequences_.ring(sequence), s->history,
              sizeof(int32_t) * size_t(program_.limits().max_context));
  if (s->have_logits) {
    std::memcpy(sequences_.logits(sequence), s->logits,
                sizeof(float) * size_t(config().vocab_size));
  }
  q.position = s->position;
  q.have_logits = s->have_logits;
  q.logits_step = 0;  // in host memory now; the backend's are another step's
  q.host_stale = false;
  (void)q.detokenizer.RestorePending(s->pending, s->n_pending);  // valid: it came from Copy
  return Status::Ok();
}

Status Engine::WriteSessionPayload(AtomicFile* file, StreamChecksum* checksum, int32_t sequence) {
  const Sequence& q = sequences_.at(sequence);
  auto put = [&](const void* data, size_t bytes) {
    checksum->Add(data, bytes);
    return file->Write(data, bytes);
  };
  STATICLM_RETURN_IF_ERROR(
      put(sequences_.ring(sequence), sizeof(int32_t) * size_t(program_.limits().max_context)));
  if (q.have_logits) {
    STATICLM_RETURN_IF_ERROR(
        put(sequences_.logits(sequence), sizeof(float) * size_t(config().vocab_size)));
  }
  uint8_t* staging = session_.staging.data();
  const size_t capacity = session_.staging.size();
  const CacheRegions& layout = session_.cache_regions;
  for (size_t i = 0; i < layout.RegionCount(); ++i) {
    KvRegion r = layout.Region(i, q.position, sequence);
    for (uint64_t done = 0; done < r.bytes;) {
      size_t n = Smaller(r.bytes - done, capacity);
      STATICLM_RETURN_IF_ERROR(
          backend()->ReadBuffer(BufferId::kKvCache, r.offset + done, n, staging));
      STATICLM_RETURN_IF_ERROR(put(staging, n));
      done += n;
    }
  }
  return Status::Ok();
}

Status Engine::SaveSession(const char* path, int32_t sequence) {
  if (!allocated()) return NotAllocated();
  if (path == nullptr) return Status::Error(StatusCode::kInvalidArgument, "path is NULL");
  if (!ValidSequence(sequence)) return NoSuchSequence();
  STATICLM_RETURN_IF_ERROR(FetchHostLogits(sequence));
  const Sequence& q = sequences_.at(sequence);
  SessionHeader h;
  h.model_fingerprint = model_.Fingerprint();
  h.plan_hash = session_.plan_hash;
  h.window = program_.limits().window;
  h.sinks = program_.limits().sinks;
  h.kv_dtype = static_cast<uint32_t>(program_.plan(0).limits.kv_dtype);
  h.max_context = program_.limits().max_context;
  h.vocab_size = config().vocab_size;
  h.position = q.position;
  h.have_logits = q.have_logits;
  h.kv_prefix = session_.cache_regions.prefix();
  h.kv_bytes = session_.cache_regions.StoredBytes(q.position);
  q.rng.GetState(h.rng_state);
  h.n_pending = static_cast<uint32_t>(q.detokenizer.CopyPending(h.pending));
  h.payload_bytes = sizeof(int32_t) * uint64_t(program_.limits().max_context) +
                    (q.have_logits ? sizeof(float) * uint64_t(config().vocab_size) : 0) +
                    h.kv_bytes;

  AtomicFile file;
  STATICLM_RETURN_IF_ERROR(file.Open(path));
  uint8_t header[kSessionHeaderBytes] = {0};
  STATICLM_RETURN_IF_ERROR(file.Write(header, sizeof(header)));  // rewritten once complete
  StreamChecksum checksum;
  STATICLM_RETURN_IF_ERROR(WriteSessionPayload(&file, &checksum, sequence));
  h.payload_checksum = checksum.value();
  EncodeSessionHeader(h, header);
  STATICLM_RETURN_IF_ERROR(file.WriteAt(0, header, sizeof(header)));
  return file.Commit();
}

// What the header must say for this context to take the session. The model fingerprint is
// checked by the caller, first.
Status Engine::CheckSessionHeader(const SessionHeader& h) const {
  if (h.window != program_.limits().window || h.sinks != program_.limits().sinks ||
      h.kv_dtype != static_cast<uint32_t>(program_.plan(0).limits.kv_dtype)) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "it was made for another cache policy (window %d, sinks %d, kv %s; "
                         "this context: window %d, sinks %d, kv %s)",
                         h.window, h.sinks, DTypeName(static_cast<DType>(h.kv_dtype)),
                         program_.limits().window, program_.limits().sinks,
                         DTypeName(program_.plan(0).limits.kv_dtype));
  }
  if (h.plan_hash != session_.plan_hash) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "it was made for another plan (context %d, this context %d; or the "
                         "prefill chunk or fusions differ)",
                         h.max_context, program_.limits().max_context);
  }
  if (h.max_context != program_.limits().max_context || h.vocab_size != config().vocab_size ||
      h.kv_prefix != session_.cache_regions.prefix()) {
    return Status::Error(StatusCode::kFormatError, "its sizes do not match its plan");
  }
  if (h.position < 0 || (h.kv_prefix && h.position > session_.cache_regions.capacity()) ||
      (h.window == 0 && h.position > program_.limits().max_context)) {
    return Status::Error(StatusCode::kFormatError, "its position %d is out of range", h.position);
  }
  uint64_t expected = sizeof(int32_t) * uint64_t(program_.limits().max_context) +
                      (h.have_logits ? sizeof(float) * uint64_t(config().vocab_size) : 0) +
                      session_.cache_regions.StoredBytes(h.position);
  if (h.kv_bytes != session_.cache_regions.StoredBytes(h.position) || h.payload_bytes != expected) {
    return Status::Error(StatusCode::kFormatError, "its payload size is inconsistent");
  }
  if ((h.rng_state[0] | h.rng_state[1] | h.rng_state[2] | h.rng_state[3]) == 0) {
    return Status::Error(StatusCode::kFormatError, "its random state is invalid");
  }
  Detokenizer probe;
  if (!probe.RestorePending(h.pending, h.n_pending).ok()) {
    return Status::Error(StatusCode::kFormatError, "its held text bytes are invalid");
  }
  return Status::Ok();
}

// Reads the payload through the staging buffer. Without `apply` it only checks (the reader
// keeps the checksum); with it, it also writes history, logits and cache.
Status Engine::StreamSessionPayload(SessionReader* reader, const SessionHeader& h, int32_t sequence,
                                    bool apply) {
  uint8_t* staging = session_.staging.data();
  const size_t capacity = session_.staging.size();
  auto stream = [&](uint64_t bytes, auto&& deliver) -> Status {
    for (uint64_t done = 0; done < bytes;) {
      size_t n = Smaller(bytes - done, capacity);
      STATICLM_RETURN_IF_ERROR(reader->Read(staging, n));
      STATICLM_RETURN_IF_ERROR(deliver(done, n));
      done += n;
    }
    return Status::Ok();
  };
  const int32_t vocab = config().vocab_size;
  STATICLM_RETURN_IF_ERROR(stream(
      sizeof(int32_t) * uint64_t(program_.limits().max_context),
      [&](uint64_t at, size_t n) -> Status {
        for (size_t i = 0; i < n; i += sizeof(int32_t)) {
          int32_t token = 0;
          std::memcpy(&token, staging + i, sizeof(token));
          if (token < 0 || token >= vocab) {
            return Status::Error(StatusCode::kFormatError, "its history holds token %d", token);
          }
        }
        if (apply)
          std::memcpy(reinterpret_cast<uint8_t*>(sequences_.ring(sequence)) + at, staging, n);
        return Status::Ok();
      }));
  if (h.have_logits) {
    STATICLM_RETURN_IF_ERROR(
        stream(sizeof(float) * uint64_t(vocab), [&](uint64_t at, size_t n) -> Status {
          for (size_t i = 0; i + sizeof(float) <= n; i += sizeof(float)) {
            float logit;
            std::memcpy(&logit, staging + i, sizeof(logit));
            if (!std::isfinite(logit)) {
              return Status::Error(StatusCode::kFormatError, "its logits are not finite");
            }
          }
          if (apply) {
            std::memcpy(reinterpret_cast<uint8_t*>(sequences_.logits(sequence)) + at, staging, n);
          }
          return Status::Ok();
        }));
  }
  const CacheRegions& layout = session_.cache_regions;
  for (size_t i = 0; i < layout.RegionCount(); ++i) {
    KvRegion r = layout.Region(i, h.position, sequence);
    STATICLM_RETURN_IF_ERROR(stream(r.bytes, [&](uint64_t at, size_t n) -> Status {
      if (!apply) return layout.CheckValues(r.offset + at, staging, n);
      return backend()->WriteBuffer(BufferId::kKvCache, r.offset + at, n, staging);
    }));
  }
  return Status::Ok();
}

Status Engine::LoadSession(const char* path, int32_t sequence) {
  if (!allocated()) return NotAllocated();
  if (path == nullptr) return Status::Error(StatusCode::kInvalidArgument, "path is NULL");
  if (!ValidSequence(sequence)) return NoSuchSequence();
  Sequence& q = sequences_.at(sequence);
  SessionReader reader;
  STATICLM_RETURN_IF_ERROR(reader.Open(path));
  if (reader.size() < kSessionHeaderBytes) {
    return Status::Error(StatusCode::kFormatError,
                         "session file %s is truncated (%llu bytes, less than its header)", path,
                         static_cast<unsigned long long>(reader.size()));
  }
  uint8_t raw[kSessionHeaderBytes];
  STATICLM_RETURN_IF_ERROR(reader.Read(raw, sizeof(raw)));
  SessionHeader h;
  Status s = DecodeSessionHeader(raw, &h);
  if (s.ok() && h.model_fingerprint != model_.Fingerprint()) {
    s = Status::Error(StatusCode::kInvalidArgument,
                      "it was made for another model (fingerprint %016llx, this model %016llx)",
                      static_cast<unsigned long long>(h.model_fingerprint),
                      static_cast<unsigned long long>(model_.Fingerprint()));
  }
  if (s.ok()) s = CheckSessionHeader(h);
  if (s.ok() && reader.size() != kSessionHeaderBytes + h.payload_bytes) {
    s = Status::Error(StatusCode::kFormatError,
                      "it is %llu bytes, its header says %llu (truncated or extended)",
                      static_cast<unsigned long long>(reader.size()),
                      static_cast<unsigned long long>(kSessionHeaderBytes + h.payload_bytes));
  }
  // First pass: check every byte before the conversation is touched.
  if (s.ok()) s = reader.Seek(kSessionHeaderBytes);
  if (s.ok()) s = StreamSessionPayload(&reader, h, sequence, false);
  if (s.ok() && reader.checksum() != h.payload_checksum) {
    s = Status::Error(StatusCode::kFormatError, "it is corrupted (checksum mismatch)");
  }
  if (!s.ok()) return Status::Error(s.code(), "session file %s: %s", path, s.message());

  // Second pass: the same bytes (the descriptor holds the file even if its path is replaced),
  // now applied. Only a file changed in place between the passes can fail here.
  s = reader.Seek(kSessionHeaderBytes);
  if (s.ok()) s = StreamSessionPayload(&reader, h, sequence, true);
  if (!s.ok() || reader.checksum() != h.payload_checksum) {
    (void)ResetSequence(sequence);
    return Status::Error(StatusCode::kIoError,
                         "session file %s changed while loading; the conversation was reset", path);
  }
  q.position = h.position;
  q.have_logits = h.have_logits;
  q.logits_step = 0;  // in host memory now; the backend's are another step's
  q.host_stale = false;
  (void)q.rng.SetState(h.rng_state);
  (void)q.detokenizer.RestorePending(h.pending, h.n_pending);
  return Status::Ok();
}

}  // namespace staticlm
