#include "runtime/plan/decoder_plan_builder.h"

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <initializer_list>

#include "contract/kv_policy.h"
#include "runtime/gguf/gguf_file.h"
#include "runtime/plan/fusion_passes.h"

namespace staticlm {
namespace {

// KIVI's group: keys are quantized per channel over this many tokens, and the tokens of the
// last, incomplete group stay in full precision.
constexpr int32_t kQ4Group = 32;

int32_t RingChunk(const PlanLimits& l) {
  const int32_t tokens = TokensPerSequence(l);
  return l.cache_chunk > tokens ? l.cache_chunk : tokens;
}

}  // namespace

// The layer's cache: policy from the limits, slots from the policy, the layout from kv_dtype.
OpParams LayerCacheParams(const PlanLimits& l, int layer) {
  OpParams p{};
  const bool global = l.global_every > 1 && (layer + 1) % l.global_every == 0;
  const int32_t chunk = RingChunk(l);
  if (global && l.global_window > 0) {
    p.cache_policy = CachePolicy::kSink;
    p.window = l.global_window;
    p.sinks = l.sinks;
    p.cache_slots = l.global_window + chunk - 1;
  } else if (l.window > 0 && !global) {
    const bool sinks = l.sinks > 0 && l.global_window == 0;  // else the global layers' alone
    p.cache_policy = sinks ? CachePolicy::kSink : CachePolicy::kSlidingWindow;
    p.window = l.window;
    p.sinks = sinks ? l.sinks : 0;
    p.cache_slots = l.window + chunk - 1;
  } else {
    p.cache_slots = l.max_context;
  }
  if (l.kv_dtype == kDTypeI8) p.kv_quant = KvQuant::kQ8;
  if (l.kv_dtype == kDTypeKvQ4) {
    p.kv_quant = KvQuant::kQ4;
    p.kv_group = kQ4Group;
    // A Sink cache's ring starts after its sinks' slots rounded up to a group (SinkSlots).
    if (p.cache_policy == CachePolicy::kSink) {
      p.cache_slots = static_cast<int32_t>(SinkSlots(p)) + p.window - p.sinks + chunk - 1;
    }
    p.cache_slots = (p.cache_slots + kQ4Group - 1) / kQ4Group * kQ4Group;
    p.recent_slots = kQ4Group + chunk - 1;
  }
  return p;
}

namespace {

class Builder {
 public:
  Builder(const gguf::GgufFile& file, const ModelConfig& config, const PlanLimits& limits,
          Plan* plan)
      : file_(file), c_(config), limits_(limits), plan_(*plan) {}

  Status Build();

 private:
  uint32_t Add(BufferId buffer, DType dtype, std::initializer_list<int64_t> shape, const char* name,
               uint64_t offset = 0);
  uint32_t Activation(const char* name, int layer, int64_t rows, int64_t width);
  Status Weight(const char* name, int64_t rows, int64_t cols, bool matrix, uint32_t* index);
  Status LayerWeight(int layer, const char* suffix, int64_t rows, int64_t cols, bool matrix,
                     uint32_t* index);
  // A view of rows [first, first + rows) of weight matrix `whole` (a fused tensor's part).
  uint32_t RowView(uint32_t whole, int64_t first, int64_t rows, const char* part);
  // OpParams::rope_dims: the model's partial RoPE width, or 0 when RoPE turns whole heads (the
  // form every earlier plan has, so their hashes stay).
  int32_t PartialRopeDims() const { return c_.rope_dims < c_.head_dim ? c_.rope_dims : 0; }
  Status FindRopeFactors();
  uint32_t AddOp(OpKind kind, std::initializer_list<uint32_t> inputs,
                 std::initializer_list<uint32_t> outputs, OpParams params = {});
  // A layer's weights; the optional ones stay 0 when the architecture has none.
  struct LayerWeights {
    uint32_t attn_norm = 0, q = 0, k = 0, v = 0, o = 0, ffn_norm = 0, gate = 0, up = 0, down = 0;
    uint32_t q_norm = 0, k_norm = 0, post_attn_norm = 0, post_ffn_norm = 0;
    uint32_t q_bias = 0, k_bias = 0, v_bias = 0;
  };
  Status ReadLayerWeights(int layer, LayerWeights* w);
  Status ReadAttentionWeights(int layer, LayerWeights* w);
  Status ReadFfnWeights(int layer, LayerWeights* w);
  void AddHeadNorms(const LayerWeights& w, uint32_t q_raw, uint32_t k_raw, uint32_t q, uint32_t k);
  void AddResidual(int layer, const char* name, uint32_t out, uint32_t post_norm, uint32_t x);
  Status AddLayer(int layer, uint32_t x);
  int AddCaches(int layer, const OpParams& p, uint32_t* cache);
  void AddHead(uint32_t x, uint32_t out_norm, uint32_t head);
  void PlaceSequentially(BufferId buffer);

  const gguf::GgufFile& file_;
  const ModelConfig& c_;
  const PlanLimits& limits_;
  Plan& plan_;
  // The RoPE frequency factors every layer's rope op reads (a weight tensor), if the model has
  // them.
  bool has_rope_factors_ = false;
  uint32_t rope_factors_ = 0;
};

uint32_t Builder::Add(BufferId buffer, DType dtype, std::initializer_list<int64_t> shape,
                      const char* name, uint64_t offset) {
  TensorRegion t;
  t.buffer = buffer;
  t.dtype = dtype;
  t.rank = static_cast<uint32_t>(shape.size());
  int d = 0;
  for (int64_t s : shape) t.shape[d++] = s;
  t.offset = offset;
  std::snprintf(t.name, sizeof(t.name), "%s", name);
  plan_.tensors.push_back(t);
  return static_cast<uint32_t>(plan_.tensors.size() - 1);
}

uint32_t Builder::Activation(const char* name, int layer, int64_t rows, int64_t width) {
  char full[48];
  if (layer >= 0) {
    std::snprintf(full, sizeof(full), "blk.%d.%s", layer, name);
  } else {
    std::snprintf(full, sizeof(full), "%s", name);
  }
  return Add(BufferId::kArena, DType::kF32, {rows, width}, full);
}

Status Builder::Weight(const char* name, int64_t rows, int64_t cols, bool matrix, uint32_t* index) {
  const gguf::TensorInfo* info = file_.FindTensor(name);
  if (info == nullptr) {
    return Status::Error(StatusCode::kFormatError, "missing tensor '%s'", name);
  }
  // GGUF lists dims innermost first: a [rows, cols] matrix is ne = {cols, rows}.
  bool shape_ok = matrix ? (info->n_dims == 2 && info->ne[0] == cols && info->ne[1] == rows)
                         : (info->n_dims == 1 && info->ne[0] == cols);
  if (!shape_ok) {
    return Status::Error(StatusCode::kFormatError,
                         "tensor '%s' has shape [%lld, %lld], expected [%lld, %lld]", name,
                         static_cast<long long>(info->ne[0]), static_cast<long long>(info->ne[1]),
                         static_cast<long long>(cols), static_cast<long long>(matrix ? rows : 1));
  }
  bool type_ok = matrix ? IsWeightMatrixDType(info->type) : info->type == DType::kF32;
  if (!type_ok) {
    return Status::Error(StatusCode::kUnsupported, "tensor '%s' has type %s, not supported %s",
                         name, DTypeName(info->type), matrix ? "for a matrix" : "for a norm");
  }
  *index = Add(BufferId::kWeights, info->type, {matrix ? rows : cols, matrix ? cols : 1}, name,
               info->offset);
  if (!matrix) plan_.tensors[*index].rank = 1;
  return Status::Ok();
}

Status Builder::LayerWeight(int layer, const char* suffix, int64_t rows, int64_t cols, bool matrix,
                            uint32_t* index) {
  char name[64];
  std::snprintf(name, sizeof(name), "blk.%d.%s.weight", layer, suffix);
  return Weight(name, rows, cols, matrix, index);
}

uint32_t Builder::AddOp(OpKind kind, std::initializer_list<uint32_t> inputs,
                        std::initializer_list<uint32_t> outputs, OpParams params) {
  Op op;
  op.kind = kind;
  for (uint32_t i : inputs) op.inputs[op.n_inputs++] = i;
  for (uint32_t o : outputs) op.outputs[op.n_outputs++] = o;
  op.params = params;
  plan_.ops.push_back(op);
  return static_cast<uint32_t>(plan_.ops.size() - 1);
}

uint32_t Builder::RowView(uint32_t whole, int64_t first, int64_t rows, const char* part) {
  TensorRegion view = plan_.tensors[whole];
  const uint64_t row_bytes = DTypeBytes(view.dtype, static_cast<uint64_t>(view.shape[1]));
  view.offset += static_cast<uint64_t>(first) * row_bytes;
  view.shape[0] = rows;
  // Names are for reports and errors: a long one is cut short.
  const int length =
      std::snprintf(view.name, sizeof(view.name), "%s[%s]", plan_.tensors[whole].name, part);
  if (length >= static_cast<int>(sizeof(view.name))) view.name[sizeof(view.name) - 2] = '~';
  plan_.tensors.push_back(view);
  return static_cast<uint32_t>(plan_.tensors.size() - 1);
}

// q, k and v from their own tensors, or as views of a fused attn_qkv ([q; k; v] rows), with
// their biases when the family has them.
Status Builder::ReadAttentionWeights(int layer, LayerWeights* w) {
  const int64_t d = c_.width, q_width = c_.n_heads * c_.head_dim;
  const int64_t kv_width = c_.n_kv_heads * c_.head_dim;
  char fused[64];
  std::snprintf(fused, sizeof(fused), "blk.%d.attn_qkv.weight", layer);
  if (file_.FindTensor(fused) != nullptr) {
    uint32_t qkv = 0;
    STATICLM_RETURN_IF_ERROR(Weight(fused, q_width + 2 * kv_width, d, true, &qkv));
    w->q = RowView(qkv, 0, q_width, "q");
    w->k = RowView(qkv, q_width, kv_width, "k");
    w->v = RowView(qkv, q_width + kv_width, kv_width, "v");
  } else {
    STATICLM_RETURN_IF_ERROR(LayerWeight(layer, "attn_q", q_width, d, true, &w->q));
    STATICLM_RETURN_IF_ERROR(LayerWeight(layer, "attn_k", kv_width, d, true, &w->k));
    STATICLM_RETURN_IF_ERROR(LayerWeight(layer, "attn_v", kv_width, d, true, &w->v));
  }
  if (c_.arch->qkv_bias) {
    char name[64];
    const struct {
      const char* tensor;
      int64_t width;
      uint32_t* index;
    } biases[] = {{"attn_q", q_width, &w->q_bias},
                  {"attn_k", kv_width, &w->k_bias},
                  {"attn_v", kv_width, &w->v_bias}};
    for (const auto& b : biases) {
      std::snprintf(name, sizeof(name), "blk.%d.%s.bias", layer, b.tensor);
      STATICLM_RETURN_IF_ERROR(Weight(name, 1, b.width, false, b.index));
    }
  }
  return LayerWeight(layer, "attn_output", d, q_width, true, &w->o);
}

// gate and up from their own tensors, or as views of a fused ffn_up ([gate; up] rows).
Status Builder::ReadFfnWeights(int layer, LayerWeights* w) {
  const int64_t d = c_.width, f = c_.ffn_width;
  if (c_.arch->fused_gate_up) {
    uint32_t gate_up = 0;
    STATICLM_RETURN_IF_ERROR(LayerWeight(layer, "ffn_up", 2 * f, d, true, &gate_up));
    w->gate = RowView(gate_up, 0, f, "gate");
    w->up = RowView(gate_up, f, f, "up");
  } else {
    STATICLM_RETURN_IF_ERROR(LayerWeight(layer, "ffn_gate", f, d, true, &w->gate));
    STATICLM_RETURN_IF_ERROR(LayerWeight(layer, "ffn_up", f, d, true, &w->up));
  }
  return LayerWeight(layer, "ffn_down", d, f, true, &w->down);
}

Status Builder::ReadLayerWeights(int layer, LayerWeights* w) {
  const int64_t d = c_.width, hd = c_.head_dim;
  const Architecture& arch = *c_.arch;
  STATICLM_RETURN_IF_ERROR(LayerWeight(layer, "attn_norm", 1, d, false, &w->attn_norm));
  STATICLM_RETURN_IF_ERROR(ReadAttentionWeights(layer, w));
  STATICLM_RETURN_IF_ERROR(LayerWeight(layer, "ffn_norm", 1, d, false, &w->ffn_norm));
  STATICLM_RETURN_IF_ERROR(ReadFfnWeights(layer, w));
  if (arch.qk_norm) {
    STATICLM_RETURN_IF_ERROR(LayerWeight(layer, "attn_q_norm", 1, hd, false, &w->q_norm));
    STATICLM_RETURN_IF_ERROR(LayerWeight(layer, "attn_k_norm", 1, hd, false, &w->k_norm));
  }
  if (arch.post_norms) {
    STATICLM_RETURN_IF_ERROR(
        LayerWeight(layer, "post_attention_norm", 1, d, false, &w->post_attn_norm));
    STATICLM_RETURN_IF_ERROR(LayerWeight(layer, "post_ffw_norm", 1, d, false, &w->post_ffn_norm));
  }
  return Status::Ok();
}

// Llama 3's rope_freqs (or linear or YaRN scaling's, which Model::Load adds to a file that
// lacks them), else Phi-3's longrope factors: the short ones while the context stays
// within the original one, the long ones beyond it (llama.cpp's choice, made once for the
// context; transformers switches per forward pass on the longest sequence it sees).
Status Builder::FindRopeFactors() {
  const char* name = "rope_freqs.weight";
  if (file_.FindTensor(name) == nullptr) {
    const bool long_context = c_.rope_scaling.original_context > 0 &&
                              limits_.max_context > c_.rope_scaling.original_context;
    name = long_context ? "rope_factors_long.weight" : "rope_factors_short.weight";
    if (file_.FindTensor(name) == nullptr) {
      if (c_.rope_scaling.kind == RopeScalingKind::kNone) return Status::Ok();
      return Status::Error(StatusCode::kInternal,
                           "RoPE scaling '%s' without its factors (rope_freqs.weight, which "
                           "loading the model adds)",
                           c_.rope_scaling.kind == RopeScalingKind::kLinear ? "linear" : "yarn");
    }
  }
  const int64_t pairs = c_.rope_dims / 2;
  STATICLM_RETURN_IF_ERROR(Weight(name, 1, pairs, false, &rope_factors_));
  const gguf::TensorInfo* info = file_.FindTensor(name);
  float factor = 0.0f;
  for (int64_t i = 0; i < pairs; ++i) {
    std::memcpy(&factor, file_.tensor_data() + info->offset + 4 * static_cast<uint64_t>(i), 4);
    if (!(factor > 0.0f && factor < 1e6f)) {
      return Status::Error(StatusCode::kFormatError, "tensor '%s' holds factor %g at %lld", name,
                           factor, static_cast<long long>(i));
    }
  }
  has_rope_factors_ = true;
  return Status::Ok();
}

// y = x + norm(out) with the post norm (Gemma's sandwich), else x += out.
void Builder::AddResidual(int layer, const char* name, uint32_t out, uint32_t post_norm,
                          uint32_t x) {
  if (!c_.arch->post_norms) {
    AddOp(OpKind::kAdd, {out}, {x});
    return;
  }
  OpParams norm{};
  norm.eps = c_.rms_eps;
  uint32_t normed = Activation(name, layer, limits_.prefill_chunk, c_.width);
  AddOp(OpKind::kRmsNorm, {out, post_norm}, {normed}, norm);
  AddOp(OpKind::kAdd, {normed}, {x});
}

// q and k normalised per head (qk_norm) from the products' raw outputs.
void Builder::AddHeadNorms(const LayerWeights& w, uint32_t q_raw, uint32_t k_raw, uint32_t q,
                           uint32_t k) {
  OpParams norm{};
  norm.eps = c_.rms_eps;
  norm.norm_group = c_.head_dim;
  AddOp(OpKind::kRmsNorm, {q_raw, w.q_norm}, {q}, norm);
  AddOp(OpKind::kRmsNorm, {k_raw, w.k_norm}, {k}, norm);
}

Status Builder::AddLayer(int layer, uint32_t x) {
  const int64_t C = limits_.prefill_chunk;
  const int64_t d = c_.width, q_width = c_.n_heads * c_.head_dim;
  const int64_t kv_width = c_.n_kv_heads * c_.head_dim, f = c_.ffn_width;
  const Architecture& arch = *c_.arch;
  LayerWeights w;
  STATICLM_RETURN_IF_ERROR(ReadLayerWeights(layer, &w));

  OpParams heads = LayerCacheParams(limits_, layer);
  const int64_t capacity = heads.cache_slots;
  uint32_t cache[6] = {0, 0, 0, 0, 0, 0};
  const int n_cache = AddCaches(layer, heads, cache);

  OpParams norm{};
  norm.eps = c_.rms_eps;
  heads.layer = layer;
  heads.n_heads = c_.n_heads;
  heads.n_kv_heads = c_.n_kv_heads;
  heads.head_dim = c_.head_dim;
  heads.rope_base = c_.LayerRopeBase(layer);
  // A Sink cache's attention turns the query as the layer's RoPE does; other caches leave it
  // false, so their plans (and the sessions saved with them) keep their hash.
  heads.rope_halves = heads.cache_policy == CachePolicy::kSink && c_.rope_halves;
  heads.rope_dims = heads.cache_policy == CachePolicy::kSink ? PartialRopeDims() : 0;
  heads.scale = c_.attention_scale;

  uint32_t h = Activation("attn_in", layer, C, d);
  uint32_t q = Activation("q", layer, C, q_width);
  uint32_t k = Activation("k", layer, C, kv_width);
  uint32_t v = Activation("v", layer, C, kv_width);
  // With per-head norms the products write raw q and k, which the norms read.
  uint32_t q_raw = arch.qk_norm ? Activation("q_raw", layer, C, q_width) : q;
  uint32_t k_raw = arch.qk_norm ? Activation("k_raw", layer, C, kv_width) : k;
  // Scratch per query head; per row and head when the rows are sequences (they run at once).
  const int64_t score_rows = limits_.rows_are_sequences ? C * c_.n_heads : c_.n_heads;
  uint32_t scores = Add(BufferId::kArena, DType::kF32, {score_rows, capacity}, "scores");
  uint32_t att = Activation("attn_out", layer, C, q_width);
  uint32_t proj = Activation("attn_proj", layer, C, d);
  AddOp(OpKind::kRmsNorm, {x, w.attn_norm}, {h}, norm);
  AddOp(OpKind::kMatMul, {h, w.q}, {q_raw});
  AddOp(OpKind::kMatMul, {h, w.k}, {k_raw});
  AddOp(OpKind::kMatMul, {h, w.v}, {v});
  if (arch.qkv_bias) {  // after all three products, which the qkv fusion joins
    AddOp(OpKind::kAddBias, {w.q_bias}, {q_raw});
    AddOp(OpKind::kAddBias, {w.k_bias}, {k_raw});
    AddOp(OpKind::kAddBias, {w.v_bias}, {v});
  }
  if (arch.qk_norm) AddHeadNorms(w, q_raw, k_raw, q, k);
  OpParams rope{};
  rope.layer = layer;
  rope.n_heads = c_.n_heads;
  rope.n_kv_heads = c_.n_kv_heads;
  rope.head_dim = c_.head_dim;
  rope.rope_base = c_.LayerRopeBase(layer);
  rope.rope_halves = c_.rope_halves;
  rope.rope_dims = PartialRopeDims();
  const bool scaled = c_.LayerRopeScaled(layer);
  rope.rope_scale = scaled ? c_.rope_attn_factor : 1.0f;
  if (has_rope_factors_ && scaled) {
    AddOp(OpKind::kRope, {rope_factors_}, {q}, rope);
    AddOp(OpKind::kRope, {rope_factors_}, {k}, rope);
  } else {
    AddOp(OpKind::kRope, {}, {q}, rope);
    AddOp(OpKind::kRope, {}, {k}, rope);
  }
  uint32_t store = AddOp(OpKind::kKvStore, {k, v}, {}, heads);
  uint32_t attend = AddOp(OpKind::kAttention, {q, cache[0], cache[1], scores}, {att}, heads);
  for (int i = 0; i < n_cache; ++i) {
    Op& s = plan_.ops[store];
    s.outputs[s.n_outputs++] = cache[i];
    if (i >= 2) {
      Op& a = plan_.ops[attend];
      a.inputs[a.n_inputs++] = cache[i];
    }
  }
  // A sink cache turns the query back to its cache position by the keys' frequencies.
  if (has_rope_factors_ && scaled && heads.cache_policy == CachePolicy::kSink) {
    Op& a = plan_.ops[attend];
    a.inputs[a.n_inputs++] = rope_factors_;
  }
  AddOp(OpKind::kMatMul, {att, w.o}, {proj});
  AddResidual(layer, "attn_post", proj, w.post_attn_norm, x);

  uint32_t h2 = Activation("ffn_in", layer, C, d);
  uint32_t gate = Activation("gate", layer, C, f);
  uint32_t up = Activation("up", layer, C, f);
  uint32_t down = Activation("ffn_out", layer, C, d);
  AddOp(OpKind::kRmsNorm, {x, w.ffn_norm}, {h2}, norm);
  AddOp(OpKind::kMatMul, {h2, w.gate}, {gate});
  AddOp(OpKind::kMatMul, {h2, w.up}, {up});
  const bool gelu = arch.activation == FfnActivation::kGeluTanh;
  AddOp(gelu ? OpKind::kGeluMul : OpKind::kSiluMul, {up}, {gate});
  AddOp(OpKind::kMatMul, {gate, w.down}, {down});
  AddResidual(layer, "ffn_post", down, w.post_ffn_norm, x);
  return Status::Ok();
}

// The layer's cache tensors in KvLayout order (k, v, [side k, v], [recent k, v]); returns how
// many.
int Builder::AddCaches(int layer, const OpParams& p, uint32_t* cache) {
  // Every sequence's cache: sequence s is the s-th of max_batch equal parts of each tensor.
  const int64_t heads = int64_t{limits_.max_batch} * c_.n_kv_heads, slots = p.cache_slots,
                hd = c_.head_dim;
  char name[48];
  auto add = [&](const char* what, DType type, std::initializer_list<int64_t> shape) {
    std::snprintf(name, sizeof(name), "blk.%d.%s", layer, what);
    return Add(BufferId::kKvCache, type, shape, name);
  };
  cache[0] = add("cache_k", limits_.kv_dtype, {heads, slots, hd});
  cache[1] = add("cache_v", limits_.kv_dtype, {heads, slots, hd});
  if (p.kv_quant == KvQuant::kQ8) {
    cache[2] = add("cache_k_scale", DType::kF32, {heads, slots});
    cache[3] = add("cache_v_scale", DType::kF32, {heads, slots});
    return 4;
  }
  if (p.kv_quant == KvQuant::kQ4) {
    cache[2] = add("cache_k_params", DType::kF32, {heads, slots / p.kv_group, 2, hd});
    cache[3] = add("cache_v_params", DType::kF32, {heads, slots, 2});
    cache[4] = add("cache_k_recent", DType::kF32, {heads, p.recent_slots, hd});
    cache[5] = add("cache_v_recent", DType::kF32, {heads, p.recent_slots, hd});
    return 6;
  }
  return 2;
}

// The output norm and head: of the last row only, or of every row when rows are sequences.
void Builder::AddHead(uint32_t x, uint32_t out_norm, uint32_t head) {
  OpParams final_norm{};
  final_norm.eps = c_.rms_eps;
  if (limits_.rows_are_sequences) {
    uint32_t normed = Activation("out_normed", -1, limits_.prefill_chunk, c_.width);
    AddOp(OpKind::kRmsNorm, {x, out_norm}, {normed}, final_norm);
    AddOp(OpKind::kMatMul, {normed, head}, {plan_.logits_tensor});
    return;
  }
  OpParams one_row{};
  one_row.rows_from_step = false;
  final_norm.rows_from_step = false;
  uint32_t last = Activation("last", -1, 1, c_.width);
  uint32_t last_normed = Activation("last_normed", -1, 1, c_.width);
  AddOp(OpKind::kTakeLast, {x}, {last}, one_row);
  AddOp(OpKind::kRmsNorm, {last, out_norm}, {last_normed}, final_norm);
  AddOp(OpKind::kMatMul, {last_normed, head}, {plan_.logits_tensor}, one_row);
}

// KV cache and io tensors are laid out one after another; only the arena is shared.
void Builder::PlaceSequentially(BufferId buffer) {
  uint64_t offset = 0;
  for (TensorRegion& t : plan_.tensors) {
    if (t.buffer != buffer) continue;
    t.offset = offset;
    offset += (t.bytes() + kPlanAlignment - 1) / kPlanAlignment * kPlanAlignment;
  }
  plan_.buffer_bytes[static_cast<int>(buffer)] = offset;
}

Status Builder::Build() {
  const int64_t C = limits_.prefill_chunk;
  plan_ = Plan{};
  plan_.limits = limits_;
  // Logits first: their offset is then the same in a decode and a prefill plan.
  const int64_t logit_rows = limits_.rows_are_sequences ? C : 1;
  plan_.logits_tensor = Add(BufferId::kIo, DType::kF32, {logit_rows, c_.vocab_size}, "logits");
  plan_.tokens_tensor = Add(BufferId::kIo, DType::kI32, {C}, "tokens");

  uint32_t embd = 0, out_norm = 0, head = 0;
  STATICLM_RETURN_IF_ERROR(Weight("token_embd.weight", c_.vocab_size, c_.width, true, &embd));
  STATICLM_RETURN_IF_ERROR(Weight("output_norm.weight", 1, c_.width, false, &out_norm));
  if (file_.FindTensor("output.weight") != nullptr) {
    STATICLM_RETURN_IF_ERROR(Weight("output.weight", c_.vocab_size, c_.width, true, &head));
  } else {
    head = embd;  // tied output head
  }

  uint32_t x = Activation("residual", -1, C, c_.width);
  OpParams embed{};
  // In f32 as transformers scales (sqrt(d) rounded once to f32); 1 leaves rows as stored.
  embed.embed_scale = c_.arch->scale_embeddings
                          ? static_cast<float>(std::sqrt(static_cast<double>(c_.width)))
                          : 1.0f;
  AddOp(OpKind::kEmbed, {embd, plan_.tokens_tensor}, {x}, embed);
  STATICLM_RETURN_IF_ERROR(FindRopeFactors());
  for (int layer = 0; layer < c_.n_layers; ++layer) STATICLM_RETURN_IF_ERROR(AddLayer(layer, x));

  AddHead(x, out_norm, head);

  plan_.buffer_bytes[static_cast<int>(BufferId::kWeights)] = file_.tensor_data_bytes();
  PlaceSequentially(BufferId::kKvCache);
  PlaceSequentially(BufferId::kIo);
  return Status::Ok();
}

// Sink caches on the global layers of a windowed model: the sinks are theirs, and their window
// at least the other layers' (no layer sees less than the model's window) and within the context.
Status CheckGlobalWindow(const PlanLimits& limits) {
  if (limits.global_window == 0) return Status::Ok();
  if (limits.global_window < 0 || limits.sinks <= 0 || limits.window <= 0 ||
      limits.global_every < 2) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "a global window (%d) needs sinks, a window and a layer pattern",
                         limits.global_window);
  }
  if (limits.global_window < limits.window || limits.global_window > limits.max_context) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "the global layers' window %d must lie between the window %d and the "
                         "context %d",
                         limits.global_window, limits.window, limits.max_context);
  }
  if (limits.sinks >= limits.global_window) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "sinks %d need a window larger than them (window %d)", limits.sinks,
                         limits.global_window);
  }
  return Status::Ok();
}

Status CheckLimits(const ModelConfig& config, const PlanLimits& limits) {
  if (limits.max_context <= 0 || limits.prefill_chunk <= 0 || limits.max_batch <= 0) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "limits must be positive (context %d, chunk %d, batch %d)",
                         limits.max_context, limits.prefill_chunk, limits.max_batch);
  }
  if (limits.max_batch > kMaxBatch) {
    return Status::Error(StatusCode::kInvalidArgument, "max batch %d exceeds %d", limits.max_batch,
                         kMaxBatch);
  }
  if (limits.rows_are_sequences && limits.prefill_chunk != limits.max_batch) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "a batched decode plan has one row per sequence (chunk %d, batch %d)",
                         limits.prefill_chunk, limits.max_batch);
  }
  if (limits.max_context > config.context_length) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "context %d exceeds the model's context length %d", limits.max_context,
                         config.context_length);
  }
  if (TokensPerSequence(limits) > limits.max_context) {
    return Status::Error(StatusCode::kInvalidArgument, "prefill chunk %d exceeds the context %d",
                         limits.prefill_chunk, limits.max_context);
  }
  if (limits.kv_dtype != DType::kF32 && limits.kv_dtype != DType::kF16 &&
      limits.kv_dtype != kDTypeI8 && limits.kv_dtype != kDTypeKvQ4) {
    return Status::Error(StatusCode::kUnsupported, "KV cache type %s is not supported",
                         DTypeName(limits.kv_dtype));
  }
  if (limits.kv_dtype == kDTypeKvQ4 && config.head_dim % 2 != 0) {
    return Status::Error(StatusCode::kUnsupported, "a q4 KV cache needs an even head size");
  }
  if (limits.window < 0 || limits.sinks < 0 || limits.global_every < 0 || limits.cache_chunk < 0) {
    return Status::Error(StatusCode::kInvalidArgument, "window, sinks and pattern must be >= 0");
  }
  if (limits.window > limits.max_context) {
    return Status::Error(StatusCode::kInvalidArgument, "window %d exceeds the context %d",
                         limits.window, limits.max_context);
  }
  if (limits.sinks > 0 && limits.sinks >= limits.window) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "sinks %d need a window larger than them (window %d)", limits.sinks,
                         limits.window);
  }
  return CheckGlobalWindow(limits);
}

std::atomic<uint64_t> build_count{0};

}  // namespace

uint64_t PlanBuildCount() {
  return build_count.load();
}

uint64_t DecoderBufferBound(const ModelConfig& c, const PlanLimits& l, BufferId buffer) {
  auto aligned = [](uint64_t b) {
    return (b + kPlanAlignment - 1) / kPlanAlignment * kPlanAlignment;
  };
  const uint64_t chunk = static_cast<uint64_t>(l.prefill_chunk);
  const uint64_t q_width = static_cast<uint64_t>(c.n_heads) * c.head_dim;
  const uint64_t kv_width = static_cast<uint64_t>(c.n_kv_heads) * c.head_dim;
  // The most slots any layer's policy gives (a ring or a static cache).
  uint64_t slots = 0;
  uint64_t layers_bytes = 0;
  for (int layer = 0; layer < c.n_layers; ++layer) {
    OpParams p = LayerCacheParams(l, layer);
    const uint64_t n = static_cast<uint64_t>(p.cache_slots);
    slots = n > slots ? n : slots;
    const uint64_t b = static_cast<uint64_t>(l.max_batch);
    uint64_t bytes = 2 * aligned(DTypeBytes(l.kv_dtype, b * kv_width * n));
    if (p.kv_quant == KvQuant::kQ8) bytes += 2 * aligned(4 * b * c.n_kv_heads * n);
    if (p.kv_quant == KvQuant::kQ4) {
      bytes += aligned(4 * 2 * b * kv_width * (n / static_cast<uint64_t>(p.kv_group))) +
               aligned(4 * 2 * b * c.n_kv_heads * n) +
               2 * aligned(4 * b * kv_width * static_cast<uint64_t>(p.recent_slots));
    }
    layers_bytes += bytes;
  }
  switch (buffer) {
    case BufferId::kKvCache:
      return layers_bytes;
    case BufferId::kIo:
      return aligned(4 * (l.rows_are_sequences ? chunk : 1) * static_cast<uint64_t>(c.vocab_size)) +
             aligned(4 * chunk);
    case BufferId::kArena: {
      // One layer's activations, each in its own bytes, plus the residual stream and head input.
      uint64_t widths = 3 * static_cast<uint64_t>(c.width) + 2 * q_width + 2 * kv_width +
                        3 * static_cast<uint64_t>(c.ffn_width);
      if (c.arch->qk_norm) widths += q_width + kv_width;                     // raw q and k
      if (c.arch->post_norms) widths += 2 * static_cast<uint64_t>(c.width);  // normalised outputs
      const uint64_t score_rows = (l.rows_are_sequences ? chunk : 1) * c.n_heads;
      uint64_t layer = 4 * (chunk * widths + score_rows * slots) + 16 * kPlanAlignment;
      return 2 * layer + aligned(4 * chunk * c.width) + 2 * aligned(4 * chunk * c.width);
    }
    case BufferId::kWeights:
      break;
  }
  return 0;
}

Status BuildDecoderPlan(const gguf::GgufFile& file, const ModelConfig& config,
                        const PlanLimits& limits, uint32_t fusions, Plan* plan,
                        ArenaReport* arena) {
  build_count.fetch_add(1);
  STATICLM_RETURN_IF_ERROR(CheckLimits(config, limits));
  Builder builder(file, config, limits, plan);
  STATICLM_RETURN_IF_ERROR(builder.Build());
  ApplyFusionPasses(fusions, plan);
  return PlanArena(plan, kPlanAlignment, arena);
}

}  // namespace staticlm
