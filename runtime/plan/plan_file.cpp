#include "runtime/plan/plan_file.h"

#include <cstdio>
#include <cstring>
#include <vector>

#include "platform/atomic_file.h"
#include "platform/file_map.h"

namespace staticlm {
namespace {

constexpr char kMagic[8] = {'S', 'L', 'M', 'P', 'L', 'A', 'N', '\0'};
constexpr size_t kHeaderBytes = 64;
// Bounds that no real plan approaches; they keep a hostile file from asking for huge vectors.
constexpr uint32_t kMaxTensors = 1u << 16;
constexpr uint32_t kMaxOps = 1u << 16;

uint64_t Fnv1a(const uint8_t* data, size_t size) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 0x100000001b3ull;
  return h;
}

class Writer {
 public:
  void U8(uint8_t v) { bytes_.push_back(v); }
  void U32(uint32_t v) { Raw(&v, 4); }
  void U64(uint64_t v) { Raw(&v, 8); }
  void I64(int64_t v) { Raw(&v, 8); }
  void F32(float v) { Raw(&v, 4); }
  void Raw(const void* p, size_t n) {
    const uint8_t* b = static_cast<const uint8_t*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
  }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool Raw(void* out, size_t n) {
    if (n > size_ - pos_) return false;
    std::memcpy(out, data_ + pos_, n);
    pos_ += n;
    return true;
  }
  bool U8(uint8_t* v) { return Raw(v, 1); }
  bool U32(uint32_t* v) { return Raw(v, 4); }
  bool U64(uint64_t* v) { return Raw(v, 8); }
  bool I64(int64_t* v) { return Raw(v, 8); }
  bool F32(float* v) { return Raw(v, 4); }
  size_t remaining() const { return size_ - pos_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

void WriteLimits(Writer* w, const PlanLimits& l) {
  w->U32(static_cast<uint32_t>(l.max_context));
  w->U32(static_cast<uint32_t>(l.max_batch));
  w->U32(static_cast<uint32_t>(l.prefill_chunk));
  w->U32(static_cast<uint32_t>(l.kv_dtype));
  w->U32(static_cast<uint32_t>(l.window));
  w->U32(static_cast<uint32_t>(l.sinks));
  w->U32(static_cast<uint32_t>(l.global_every));
  w->U32(static_cast<uint32_t>(l.cache_chunk));
  w->U32(static_cast<uint32_t>(l.global_window));
  w->U8(l.rows_are_sequences ? 1 : 0);
}

void WriteTensor(Writer* w, const TensorRegion& t) {
  w->U8(static_cast<uint8_t>(t.buffer));
  w->U32(static_cast<uint32_t>(t.dtype));
  w->U32(t.rank);
  w->U64(t.offset);
  for (int64_t d : t.shape) w->I64(d);
  w->Raw(t.name, sizeof(t.name));
}

void WriteOp(Writer* w, const Op& op) {
  w->U8(static_cast<uint8_t>(op.kind));
  w->U8(op.n_inputs);
  w->U8(op.n_outputs);
  for (uint32_t i : op.inputs) w->U32(i);
  for (uint32_t o : op.outputs) w->U32(o);
  const OpParams& p = op.params;
  w->U32(static_cast<uint32_t>(p.layer));
  w->U32(static_cast<uint32_t>(p.n_heads));
  w->U32(static_cast<uint32_t>(p.n_kv_heads));
  w->U32(static_cast<uint32_t>(p.head_dim));
  w->U32(static_cast<uint32_t>(p.norm_group));
  w->F32(p.eps);
  w->F32(p.rope_base);
  w->F32(p.scale);
  w->F32(p.embed_scale);
  w->F32(p.rope_scale);
  w->U8(p.rows_from_step ? 1 : 0);
  w->U8(p.n_weights);
  w->U8(static_cast<uint8_t>((p.norm_input ? 1 : 0) | (p.silu_mul ? 2 : 0) |
                             (p.accumulate ? 4 : 0) | (p.rope_halves ? 8 : 0)));
  w->U8(static_cast<uint8_t>(p.cache_policy));
  w->U8(static_cast<uint8_t>(p.kv_quant));
  for (int32_t v : {p.window, p.sinks, p.cache_slots, p.kv_group, p.recent_slots, p.rope_dims}) {
    w->U32(static_cast<uint32_t>(v));
  }
}

void WritePlan(Writer* w, const Plan& plan, const ArenaReport& arena) {
  WriteLimits(w, plan.limits);
  for (uint64_t b : plan.buffer_bytes) w->U64(b);
  w->U32(plan.tokens_tensor);
  w->U32(plan.logits_tensor);
  w->U64(arena.arena_bytes);
  w->U64(arena.lower_bound_bytes);
  w->U64(arena.naive_bytes);
  w->U32(static_cast<uint32_t>(plan.tensors.size()));
  w->U32(static_cast<uint32_t>(plan.ops.size()));
  for (const TensorRegion& t : plan.tensors) WriteTensor(w, t);
  for (const Op& op : plan.ops) WriteOp(w, op);
}

Status Truncated(const char* what) {
  return Status::Error(StatusCode::kFormatError, "plan file is truncated in %s", what);
}

bool ReadLimits(Reader* r, PlanLimits* l) {
  uint32_t ctx = 0, batch = 0, chunk = 0, kv = 0, window = 0, sinks = 0, every = 0, cache_chunk = 0,
           global_window = 0;
  if (!r->U32(&ctx) || !r->U32(&batch) || !r->U32(&chunk) || !r->U32(&kv) || !r->U32(&window) ||
      !r->U32(&sinks) || !r->U32(&every) || !r->U32(&cache_chunk) || !r->U32(&global_window)) {
    return false;
  }
  uint8_t rows_are_sequences = 0;
  if (!r->U8(&rows_are_sequences) || rows_are_sequences > 1) return false;
  l->rows_are_sequences = rows_are_sequences == 1;
  l->window = static_cast<int32_t>(window);
  l->sinks = static_cast<int32_t>(sinks);
  l->global_every = static_cast<int32_t>(every);
  l->cache_chunk = static_cast<int32_t>(cache_chunk);
  l->global_window = static_cast<int32_t>(global_window);
  l->max_context = static_cast<int32_t>(ctx);
  l->max_batch = static_cast<int32_t>(batch);
  l->prefill_chunk = static_cast<int32_t>(chunk);
  l->kv_dtype = static_cast<DType>(kv);
  return true;
}

Status ReadTensor(Reader* r, TensorRegion* t) {
  uint8_t buffer = 0;
  uint32_t dtype = 0;
  if (!r->U8(&buffer) || !r->U32(&dtype) || !r->U32(&t->rank) || !r->U64(&t->offset)) {
    return Truncated("a tensor");
  }
  for (int64_t& d : t->shape) {
    if (!r->I64(&d)) return Truncated("a tensor");
  }
  if (!r->Raw(t->name, sizeof(t->name))) return Truncated("a tensor");
  t->name[sizeof(t->name) - 1] = '\0';
  if (buffer >= kBufferCount || !IsKnownPlanDType(dtype) || t->rank < 1 || t->rank > 4) {
    return Status::Error(StatusCode::kFormatError, "plan file has a malformed tensor record");
  }
  t->buffer = static_cast<BufferId>(buffer);
  t->dtype = static_cast<DType>(dtype);
  return Status::Ok();
}

Status ReadOp(Reader* r, Op* op) {
  uint8_t kind = 0, rows_from_step = 0, flags = 0, policy = 0, quant = 0;
  uint32_t layer = 0, heads = 0, kv_heads = 0, head_dim = 0, norm_group = 0;
  uint32_t cache[6] = {0, 0, 0, 0, 0, 0};  // the cache's five values, then rope_dims
  OpParams& p = op->params;
  bool ok = r->U8(&kind) && r->U8(&op->n_inputs) && r->U8(&op->n_outputs);
  for (uint32_t& i : op->inputs) ok = ok && r->U32(&i);
  for (uint32_t& o : op->outputs) ok = ok && r->U32(&o);
  ok = ok && r->U32(&layer) && r->U32(&heads) && r->U32(&kv_heads) && r->U32(&head_dim) &&
       r->U32(&norm_group) && r->F32(&p.eps) && r->F32(&p.rope_base) && r->F32(&p.scale) &&
       r->F32(&p.embed_scale) && r->F32(&p.rope_scale) && r->U8(&rows_from_step) &&
       r->U8(&p.n_weights) && r->U8(&flags) && r->U8(&policy) && r->U8(&quant);
  for (uint32_t& v : cache) ok = ok && r->U32(&v);
  if (!ok) return Truncated("an op");
  if (kind > static_cast<uint8_t>(OpKind::kAddBias) || op->n_inputs > kMaxOpInputs ||
      op->n_outputs > kMaxOpOutputs || op->n_outputs == 0 || rows_from_step > 1 || flags > 15 ||
      policy > static_cast<uint8_t>(CachePolicy::kSink) ||
      quant > static_cast<uint8_t>(KvQuant::kQ4)) {
    return Status::Error(StatusCode::kFormatError, "plan file has a malformed op record");
  }
  op->kind = static_cast<OpKind>(kind);
  p.layer = static_cast<int32_t>(layer);
  p.n_heads = static_cast<int32_t>(heads);
  p.n_kv_heads = static_cast<int32_t>(kv_heads);
  p.head_dim = static_cast<int32_t>(head_dim);
  p.norm_group = static_cast<int32_t>(norm_group);
  p.rows_from_step = rows_from_step == 1;
  p.norm_input = (flags & 1) != 0;
  p.silu_mul = (flags & 2) != 0;
  p.accumulate = (flags & 4) != 0;
  p.rope_halves = (flags & 8) != 0;
  p.cache_policy = static_cast<CachePolicy>(policy);
  p.kv_quant = static_cast<KvQuant>(quant);
  p.window = static_cast<int32_t>(cache[0]);
  p.sinks = static_cast<int32_t>(cache[1]);
  p.cache_slots = static_cast<int32_t>(cache[2]);
  p.kv_group = static_cast<int32_t>(cache[3]);
  p.recent_slots = static_cast<int32_t>(cache[4]);
  p.rope_dims = static_cast<int32_t>(cache[5]);
  return Status::Ok();
}

Status ReadPlan(Reader* r, Plan* plan, ArenaReport* arena) {
  uint32_t n_tensors = 0, n_ops = 0;
  bool ok = ReadLimits(r, &plan->limits);
  for (uint64_t& b : plan->buffer_bytes) ok = ok && r->U64(&b);
  ok = ok && r->U32(&plan->tokens_tensor) && r->U32(&plan->logits_tensor) &&
       r->U64(&arena->arena_bytes) && r->U64(&arena->lower_bound_bytes) &&
       r->U64(&arena->naive_bytes) && r->U32(&n_tensors) && r->U32(&n_ops);
  if (!ok) return Truncated("a plan header");
  if (n_tensors > kMaxTensors || n_ops > kMaxOps) {
    return Status::Error(StatusCode::kFormatError, "plan file claims %u tensors and %u ops",
                         n_tensors, n_ops);
  }
  plan->tensors.resize(n_tensors);
  plan->ops.resize(n_ops);
  for (TensorRegion& t : plan->tensors) STATICLM_RETURN_IF_ERROR(ReadTensor(r, &t));
  for (Op& op : plan->ops) STATICLM_RETURN_IF_ERROR(ReadOp(r, &op));
  if (plan->tokens_tensor >= n_tensors || plan->logits_tensor >= n_tensors) {
    return Status::Error(StatusCode::kFormatError, "plan file names io tensors out of range");
  }
  return Status::Ok();
}

}  // namespace

Status SavePlanFile(const char* path, const PlanFileContents& c) {
  Writer payload;
  payload.Raw(c.backend, sizeof(c.backend));
  payload.Raw(c.kernels, sizeof(c.kernels));
  payload.U32(static_cast<uint32_t>(c.n_plans));
  for (int i = 0; i < c.n_plans; ++i) WritePlan(&payload, c.plans[i], c.arenas[i]);

  Writer file;
  file.Raw(kMagic, sizeof(kMagic));
  file.U32(kPlanFormatVersion);
  file.U32(0);  // reserved
  file.U64(payload.bytes().size());
  file.U64(Fnv1a(payload.bytes().data(), payload.bytes().size()));
  file.U64(c.model_fingerprint);
  while (file.bytes().size() < kHeaderBytes) file.U8(0);
  file.Raw(payload.bytes().data(), payload.bytes().size());

  return WriteFileAtomically(path, file.bytes().data(), file.bytes().size());
}

Status ParsePlanFile(const uint8_t* data, size_t size, PlanFileContents* c) {
  if (size < kHeaderBytes) return Truncated("the header");
  if (std::memcmp(data, kMagic, sizeof(kMagic)) != 0) {
    return Status::Error(StatusCode::kFormatError, "not a staticlm plan file (bad magic)");
  }
  Reader header(data + sizeof(kMagic), kHeaderBytes - sizeof(kMagic));
  uint32_t version = 0, reserved = 0;
  uint64_t payload_bytes = 0, checksum = 0;
  header.U32(&version);
  header.U32(&reserved);
  header.U64(&payload_bytes);
  header.U64(&checksum);
  header.U64(&c->model_fingerprint);
  if (version != kPlanFormatVersion) {
    return Status::Error(StatusCode::kUnsupported,
                         "plan file format version %u; this staticlm reads version %u", version,
                         kPlanFormatVersion);
  }
  if (payload_bytes != size - kHeaderBytes) {
    return Status::Error(StatusCode::kFormatError,
                         "plan file is %zu bytes, its header says %llu (truncated or extended)",
                         size, static_cast<unsigned long long>(payload_bytes + kHeaderBytes));
  }
  const uint8_t* payload = data + kHeaderBytes;
  if (Fnv1a(payload, payload_bytes) != checksum) {
    return Status::Error(StatusCode::kFormatError, "plan file checksum mismatch (file changed)");
  }
  Reader r(payload, payload_bytes);
  uint32_t n_plans = 0;
  if (!r.Raw(c->backend, sizeof(c->backend)) || !r.Raw(c->kernels, sizeof(c->kernels)) ||
      !r.U32(&n_plans)) {
    return Truncated("the payload header");
  }
  c->backend[sizeof(c->backend) - 1] = '\0';
  c->kernels[sizeof(c->kernels) - 1] = '\0';
  if (n_plans < 1 || n_plans > 2) {
    return Status::Error(StatusCode::kFormatError, "plan file holds %u plans", n_plans);
  }
  c->n_plans = static_cast<int32_t>(n_plans);
  for (uint32_t i = 0; i < n_plans; ++i) {
    STATICLM_RETURN_IF_ERROR(ReadPlan(&r, &c->plans[i], &c->arenas[i]));
  }
  if (r.remaining() != 0) {
    return Status::Error(StatusCode::kFormatError, "plan file has %zu trailing bytes",
                         r.remaining());
  }
  return Status::Ok();
}

Status LoadPlanFile(const char* path, PlanFileContents* contents) {
  FileMap map;
  STATICLM_RETURN_IF_ERROR(map.Open(path));
  Status s = ParsePlanFile(map.data(), map.size(), contents);
  if (!s.ok()) return Status::Error(s.code(), "%s: %s", path, s.message());
  return Status::Ok();
}

}  // namespace staticlm
