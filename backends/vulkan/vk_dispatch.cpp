#include "backends/vulkan/vk_dispatch.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace staticlm::vulkan {
namespace {

constexpr uint32_t kGroup = 64;         // local size of the 1-D shaders
constexpr uint32_t kMatMulColumns = 4;  // output columns per invocation (COLS in matmul.comp)
constexpr uint32_t kMatMulGroup = 16;   // invocations per column-style workgroup (WG there)
// Style 2 (matmul_units.comp): one subgroup of 8 per workgroup, so even the small products
// (192 columns: 6 workgroups) spread over a CPU device's threads.
constexpr uint32_t kUnitsGroup = 8;
constexpr uint32_t kRowTile = 8;  // rows per prefill matmul workgroup (ROWS in matmul.comp)
// The largest attention variant's head size (HD in shaders/shaders.cmake; also kv_store's q8).
constexpr int32_t kMaxHeadDim = 256;
// Most parts attention_split may cut a span into (scratch: rows · heads · parts · (hd + 2)
// floats): llvmpipe's loop budget asks for ~70 at 32,768 keys of head size 256.
constexpr uint64_t kMaxAttentionSplits = 256;

const char* WeightTypeName(DType t) {
  switch (t) {
    case DType::kF32:
      return "f32";
    case DType::kF16:
      return "f16";
    case DType::kQ4_0:
      return "q4_0";
    case DType::kQ4_1:
      return "q4_1";
    case DType::kQ8_0:
      return "q8_0";
    case DType::kBF16:
      return "bf16";
    case DType::kQ5_0:
      return "q5_0";
    case DType::kQ5_1:
      return "q5_1";
    case DType::kQ4_K:
      return "q4_k";
    case DType::kQ5_K:
      return "q5_k";
    case DType::kQ6_K:
      return "q6_k";
    case DType::kI32:
      return nullptr;
  }
  return nullptr;
}

// Bytes and blocks of the unit shaders/weight_units.glsl reads for each weight type (Q6_K: two
// 210-byte super-blocks, so that units are whole words).
struct WeightUnit {
  uint32_t bytes = 0;
  uint32_t blocks = 1;  // of 32 elements
};

WeightUnit UnitOf(DType t) {
  switch (t) {
    case DType::kQ4_1:
      return {20, 1};
    case DType::kQ4_0:
      return {36, 2};
    case DType::kQ8_0:
      return {68, 2};
    case DType::kQ5_0:
      return {44, 2};
    case DType::kQ5_1:
      return {48, 2};
    case DType::kQ4_K:
      return {144, 8};
    case DType::kQ5_K:
      return {176, 8};
    case DType::kQ6_K:
      return {420, 16};
    case DType::kF32:
      return {128, 1};
    case DType::kF16:
    case DType::kBF16:
      return {64, 1};
    default:
      return {};
  }
}

uint32_t CeilDiv(uint64_t a, uint64_t b) {
  return static_cast<uint32_t>((a + b - 1) / b);
}

struct Translator {
  const Plan& plan;
  const RopeRows& rope;
  const DispatchOptions& options;
  std::vector<Dispatch>* out;
  uint64_t* scratch_bytes;

  const TensorRegion& T(uint32_t i) const { return plan.tensors[i]; }

  Region R(uint32_t tensor) const {
    const TensorRegion& t = T(tensor);
    return Region{static_cast<Slot>(t.buffer), t.offset, t.bytes(), t.name};
  }

  Dispatch& Add(const char* shader, bool barrier_before = true) {
    out->emplace_back();
    Dispatch& d = out->back();
    std::snprintf(d.shader, sizeof(d.shader), "%s", shader);
    d.barrier_before = barrier_before;
    return d;
  }

  Status Groups(Dispatch& d, uint64_t x, uint64_t y, const Op& op) const {
    if (x > options.max_group_count_x || x == 0) {
      return Status::Error(StatusCode::kUnsupported,
                           "Vulkan: %s op on %s needs %llu workgroups, the device allows %u",
                           OpKindName(op.kind), T(op.outputs[0]).name,
                           static_cast<unsigned long long>(x), options.max_group_count_x);
    }
    d.groups[0] = static_cast<uint32_t>(x);
    d.groups[1] = static_cast<uint32_t>(y);
    return Status::Ok();
  }

  static uint32_t StepRows(const Op& op, const TensorRegion& out_tensor) {
    return op.params.rows_from_step ? 0u : static_cast<uint32_t>(out_tensor.shape[0]);
  }

  // Whole rows, or (a kRmsNorm with norm_group) each group of a row alone: a workgroup each.
  Status RmsNorm(const Op& op, uint32_t x, uint32_t weight, uint32_t y) {
    const int64_t group = op.kind == OpKind::kRmsNorm ? op.params.norm_group : 0;
    const uint64_t groups_per_row = group > 0 ? static_cast<uint64_t>(T(y).shape[1] / group) : 1;
    Dispatch& d = Add("rms_norm");
    d.bind[0] = R(x);
    d.bind[1] = R(weight);
    d.bind[2] = R(y);
    d.pc.rows = StepRows(op, T(y));
    d.pc.a = static_cast<uint32_t>(T(weight).elements());
    d.pc.b = static_cast<uint32_t>(groups_per_row);
    d.pc.fa = op.params.eps;
    return Groups(d, static_cast<uint64_t>(T(y).shape[0]) * groups_per_row, 1, op);
  }

  // The most rows of `w` one binding holds: the largest storage binding less the slack an
  // aligned binding offset may add before the rows (up to unit + 1 alignments: see
  // UnitBindingOffset) and the spare word the quantized loaders may read; a multiple of the
  // rows that fill whole words, so that every part starts 4-byte aligned as the tensor does.
  Status RowsPerBinding(const TensorRegion& w, uint32_t unit_bytes, uint64_t* rows) const {
    const uint64_t row_bytes = DTypeBytes(w.dtype, static_cast<uint64_t>(w.shape[1]));
    const uint64_t slack = options.storage_offset_align * (uint64_t{unit_bytes} + 1) + 4;
    const uint64_t limit = options.max_storage_range;
    const uint64_t word_rows = row_bytes % 4 == 0 ? 1 : (row_bytes % 2 == 0 ? 2 : 4);
    *rows = limit > slack ? (limit - slack) / row_bytes : 0;
    *rows -= *rows % word_rows;
    if (*rows == 0) {
      return Status::Error(StatusCode::kUnsupported,
                           "Vulkan: a row of tensor %s exceeds the device's largest storage "
                           "binding (%llu bytes)",
                           w.name, static_cast<unsigned long long>(limit));
    }
    return Status::Ok();
  }

  // Rows [first, first + count) of a weight tensor.
  Region Rows(uint32_t tensor, uint64_t first, uint64_t count) const {
    const TensorRegion& t = T(tensor);
    const uint64_t row_bytes = DTypeBytes(t.dtype, static_cast<uint64_t>(t.shape[1]));
    Region r = R(tensor);
    r.offset += first * row_bytes;
    r.bytes = count * row_bytes;
    return r;
  }

  // An f32 output tensor from column `first` of its first row on.
  Region FromColumn(uint32_t tensor, uint64_t first) const {
    Region r = R(tensor);
    r.offset += first * sizeof(float);
    r.bytes -= first * sizeof(float);
    return r;
  }

  // One dispatch per range of output columns whose weight rows fit a binding (one, unless the
  // weight exceeds the device's largest storage binding: the Gemma 3 output head).
  Status MatMulDispatch(const Op& op, int mode, uint32_t x, uint32_t w0, uint32_t w1, uint32_t y0,
                        int64_t y1_or_acc, bool barrier_before) {
    const TensorRegion& w = T(w0);
    const char* type = WeightTypeName(w.dtype);
    if (type == nullptr || w.shape[1] % GetDTypeInfo(w.dtype).block_elements != 0) {
      return Status::Error(StatusCode::kUnsupported, "Vulkan: no matmul kernel for %s (%s)", w.name,
                           DTypeName(w.dtype));
    }
    int style = options.matmul_style;
    if (style == 1 && static_cast<uint64_t>(w.shape[0]) > options.max_group_count_x) style = 0;
    if (style == 2 && !UnitLoadsFit(x, w0, mode == 1 ? w1 : w0)) style = 0;
    const uint32_t w_unit = style == 2 ? UnitOf(w.dtype).bytes : 4;
    uint64_t per_binding = 0;
    STATICLM_RETURN_IF_ERROR(RowsPerBinding(w, w_unit, &per_binding));
    // Decode plans get the one-row shader: a CPU device would otherwise run all 8 rows of a
    // tile under a mask.
    uint32_t row_tile = T(y0).shape[0] == 1 ? 1 : kRowTile;
    char shader[40];
    std::snprintf(shader, sizeof(shader), "matmul_%s_m%d_s%d_r%u", type, mode, style, row_tile);
    const uint64_t n_out = static_cast<uint64_t>(w.shape[0]);
    for (uint64_t first = 0; first < n_out; first += per_binding) {
      const uint64_t count = std::min(per_binding, n_out - first);
      // The parts write interleaved columns of the same rows: each waits for the previous.
      Dispatch& d = Add(shader, first == 0 ? barrier_before : true);
      d.bind[0] = R(x);
      d.bind[1] = Rows(w0, first, count);
      d.bind[2] = FromColumn(y0, first);
      if (y1_or_acc >= 0) d.bind[3] = FromColumn(static_cast<uint32_t>(y1_or_acc), first);
      if (mode == 1) d.bind[4] = Rows(w1, first, count);
      d.pc.rows = StepRows(op, T(y0));
      d.pc.a = static_cast<uint32_t>(count);
      d.pc.b = static_cast<uint32_t>(w.shape[1]);
      d.pc.c = static_cast<uint32_t>(DTypeBytes(w.dtype, static_cast<uint64_t>(w.shape[1])));
      d.pc.d = static_cast<uint32_t>(n_out);
      if (style == 2) {
        d.bind[0].unit_bytes = 16;
        d.bind[1].unit_bytes = w_unit;
        if (mode == 1) d.bind[4].unit_bytes = w_unit;
      }
      uint64_t x_groups =
          style == 1 ? count
                     : CeilDiv(count, (style == 2 ? kUnitsGroup : kMatMulGroup) * kMatMulColumns);
      STATICLM_RETURN_IF_ERROR(
          Groups(d, x_groups, CeilDiv(static_cast<uint64_t>(T(y0).shape[0]), row_tile), op));
    }
    return Status::Ok();
  }

  // An embedding lookup, one dispatch per range of table rows that fits a binding; each writes
  // the output rows whose ids fall in its range.
  Status Embed(const Op& op) {
    const TensorRegion& table = T(op.inputs[0]);
    const TensorRegion& y = T(op.outputs[0]);
    const char* type = WeightTypeName(table.dtype);
    if (type == nullptr) {
      return Status::Error(StatusCode::kUnsupported, "Vulkan: no embedding kernel for %s (%s)",
                           table.name, DTypeName(table.dtype));
    }
    uint64_t per_binding = 0;
    STATICLM_RETURN_IF_ERROR(RowsPerBinding(table, 4, &per_binding));
    char shader[40];
    std::snprintf(shader, sizeof(shader), "embed_%s", type);
    const uint32_t width = static_cast<uint32_t>(y.shape[1]);
    const uint64_t vocab = static_cast<uint64_t>(table.shape[0]);
    for (uint64_t first = 0; first < vocab; first += per_binding) {
      Dispatch& d = Add(shader);
      d.bind[0] = Rows(op.inputs[0], first, std::min(per_binding, vocab - first));
      d.bind[1] = R(op.inputs[1]);
      d.bind[2] = R(op.outputs[0]);
      d.pc.rows = StepRows(op, y);
      d.pc.a = width;
      d.pc.c = static_cast<uint32_t>(DTypeBytes(table.dtype, width));
      d.pc.d = static_cast<uint32_t>(vocab);
      d.pc.e = static_cast<uint32_t>(first);
      d.pc.f = static_cast<uint32_t>(std::min(per_binding, vocab - first));
      d.pc.fa = op.params.embed_scale;
      STATICLM_RETURN_IF_ERROR(
          Groups(d, CeilDiv(static_cast<uint64_t>(y.elements()), kGroup), 1, op));
    }
    return Status::Ok();
  }

  // Style 2 reads x in uvec4s and the weights in units: every row a whole number of units,
  // and bindings that start a whole number of units before each tensor.
  bool UnitLoadsFit(uint32_t x, uint32_t w0, uint32_t w1) const {
    const TensorRegion& w = T(w0);
    WeightUnit unit = UnitOf(w.dtype);
    uint64_t ignored = 0;
    auto fits = [&](uint32_t tensor, uint64_t bytes) {
      return UnitBindingOffset(T(tensor).offset, options.storage_offset_align, bytes, &ignored);
    };
    return unit.bytes != 0 && w.shape[1] % (32 * unit.blocks) == 0 && fits(x, 16) &&
           fits(w0, unit.bytes) && fits(w1, unit.bytes);
  }

  Status Elementwise(const Op& op, const char* shader, uint32_t b0, uint32_t b1, uint64_t count,
                     uint32_t width) {
    Dispatch& d = Add(shader);
    d.bind[0] = R(b0);
    d.bind[1] = R(b1);
    d.pc.rows = StepRows(op, T(op.outputs[0]));
    d.pc.a = width;
    return Groups(d, CeilDiv(count, kGroup), 1, op);
  }

  Status MatMul(const Op& op) {
    const OpParams& p = op.params;
    MatMulLayout layout = GetMatMulLayout(p);
    uint32_t x = op.inputs[0];
    if (p.norm_input) {
      uint32_t normed = op.outputs[layout.normed_output];
      STATICLM_RETURN_IF_ERROR(RmsNorm(op, x, op.inputs[layout.norm_weight_input], normed));
      x = normed;
    }
    if (p.silu_mul) {
      if (T(op.inputs[1]).dtype == T(op.inputs[2]).dtype &&
          T(op.inputs[1]).shape[0] == T(op.inputs[2]).shape[0]) {
        return MatMulDispatch(op, 1, x, op.inputs[1], op.inputs[2], op.outputs[0], op.outputs[1],
                              true);
      }
      // Different weight types: two plain products, then the gate.
      STATICLM_RETURN_IF_ERROR(MatMulDispatch(op, 0, x, op.inputs[1], 0, op.outputs[0], -1, true));
      STATICLM_RETURN_IF_ERROR(MatMulDispatch(op, 0, x, op.inputs[2], 0, op.outputs[1], -1, false));
      const TensorRegion& y = T(op.outputs[0]);
      return Elementwise(op, "silu_mul", op.outputs[0], op.outputs[1],
                         static_cast<uint64_t>(y.elements()), static_cast<uint32_t>(y.shape[1]));
    }
    if (p.accumulate) {
      return MatMulDispatch(op, 2, x, op.inputs[1], 0, op.outputs[0], op.outputs[layout.acc_output],
                            true);
    }
    for (int i = 0; i < layout.n_weights; ++i) {
      STATICLM_RETURN_IF_ERROR(
          MatMulDispatch(op, 0, x, op.inputs[1 + i], 0, op.outputs[i], -1, i == 0));
    }
    return Status::Ok();
  }

  // The kv_store / attention_split variant suffix of a cache, or a status saying why none.
  Status CheckCache(const Op& op, const TensorRegion& cache, const char** type) const {
    const OpParams& p = op.params;
    if (p.kv_quant == KvQuant::kQ8) {
      *type = "q8";
    } else if (p.kv_quant == KvQuant::kQ4) {
      *type = "q4";
    } else if (cache.dtype == DType::kF16 || cache.dtype == DType::kF32) {
      *type = cache.dtype == DType::kF16 ? "f16" : "f32";
    } else {
      return Status::Error(StatusCode::kUnsupported,
                           "Vulkan backend: KV cache type %s is not implemented (f16, f32, q8)",
                           DTypeName(cache.dtype));
    }
    // Packed codes fill whole words: int8 four a word, nibbles eight.
    bool packed_size = (p.kv_quant != KvQuant::kQ8 || p.head_dim % 4 == 0) &&
                       (p.kv_quant != KvQuant::kQ4 || p.head_dim % 8 == 0);
    if (p.head_dim % 2 != 0 || p.head_dim > kMaxHeadDim || !packed_size || p.n_kv_heads <= 0 ||
        p.n_heads % p.n_kv_heads != 0) {
      return Status::Error(StatusCode::kUnsupported,
                           "Vulkan backend: head size %d / %d KV heads not supported (even, ≤256; "
                           "q8: a multiple of 4; q4: of 8)",
                           p.head_dim, p.n_kv_heads);
    }
    if (p.sinks >= (1 << 24)) {
      return Status::Error(StatusCode::kUnsupported, "Vulkan backend: too many sinks (%d)",
                           p.sinks);
    }
    // Push constant h holds q4's group in its high half (CachePushConstants).
    if (p.kv_group >= (1 << 16)) {
      return Status::Error(StatusCode::kUnsupported, "Vulkan backend: q4 groups of %d tokens",
                           p.kv_group);
    }
    return Status::Ok();
  }

  // The policy push constants of shaders/kv_policy.glsl (with the sink query's RoPE pairing), and
  // q4's group and ring size.
  static void CachePushConstants(const OpParams& p, PushConstants* pc) {
    pc->f = static_cast<uint32_t>(p.cache_policy) | (p.rope_halves ? 4u : 0u) |
            static_cast<uint32_t>(p.sinks) << 3;
    pc->g = static_cast<uint32_t>(p.window);
    // A Sink cache's RoPE width (its sinks' query turn) in the low half, q4's group above.
    const uint32_t rope_width = p.cache_policy == CachePolicy::kSink ? RopeDims(p) : 0;
    pc->h = rope_width | static_cast<uint32_t>(p.kv_group) << 16;
    pc->i = static_cast<uint32_t>(p.recent_slots);
  }

  Status KvStore(const Op& op) {
    const TensorRegion& cache = T(op.outputs[0]);
    const char* type = nullptr;
    STATICLM_RETURN_IF_ERROR(CheckCache(op, cache, &type));
    const OpParams& p = op.params;
    char shader[40];
    // q8 holds a head in an array: the wider variant only where needed.
    const bool wide = p.kv_quant == KvQuant::kQ8 && p.head_dim > 128;
    std::snprintf(shader, sizeof(shader), "kv_store_%s%s", type, wide ? "_hd256" : "");
    Dispatch& d = Add(shader);
    d.bind[0] = R(op.inputs[0]);
    d.bind[1] = R(op.inputs[1]);
    d.bind[2] = R(op.outputs[0]);
    d.bind[3] = R(op.outputs[1]);
    KvLayout layout = GetKvLayout(p.kv_quant);
    if (layout.store_side >= 0) {
      d.bind[4] = R(op.outputs[layout.store_side]);
      d.bind[5] = R(op.outputs[layout.store_side + 1]);
    }
    if (layout.store_recent >= 0) {
      d.bind[6] = R(op.outputs[layout.store_recent]);
      d.bind[7] = R(op.outputs[layout.store_recent + 1]);
    }
    d.pc.rows = StepRows(op, T(op.inputs[0]));
    d.pc.a = static_cast<uint32_t>(p.n_kv_heads);
    d.pc.b = static_cast<uint32_t>(p.head_dim);
    d.pc.c = static_cast<uint32_t>(cache.shape[1]);
    CachePushConstants(p, &d.pc);
    uint64_t rows = static_cast<uint64_t>(T(op.inputs[0]).shape[0]);
    // q8: an invocation per (row, head, k or v); else per pair of elements.
    uint64_t invocations =
        p.kv_quant == KvQuant::kQ8 ? rows * p.n_kv_heads * 2 : rows * p.n_kv_heads * p.head_dim / 2;
    STATICLM_RETURN_IF_ERROR(Groups(d, CeilDiv(invocations, kGroup), 1, op));
    if (p.kv_quant != KvQuant::kQ4) return Status::Ok();
    // q4: then pack the groups the step completes, at most ⌈rows / group⌉ of them, with the
    // same tensors and constants (copied before Add() may move the vector).
    Dispatch ring_store = d;
    Dispatch& pack = Add("kv_quantize_q4");
    std::memcpy(pack.bind, ring_store.bind, sizeof(pack.bind));
    pack.pc = ring_store.pc;
    uint64_t group = static_cast<uint64_t>(p.kv_group);
    // A batched step's row can complete a group of its own sequence: one per row.
    uint64_t groups = plan.limits.rows_are_sequences ? rows : (rows + group - 1) / group;
    pack.pc.e = static_cast<uint32_t>(groups);
    uint64_t per_head = static_cast<uint64_t>(p.head_dim) / 8 + group;
    return Groups(pack, CeilDiv(groups * p.n_kv_heads * per_head, kGroup), 1, op);
  }

  // The RoPE rows of `op` (a rope op, or the query rotation of a Sink cache's attention).
  Status RopeRegion(const Op& op, Region* out) const {
    const RopeRows::Entry* e = rope.Find(plan, op);
    if (e == nullptr || op.params.head_dim % 2 != 0) {
      return Status::Error(StatusCode::kInternal, "Vulkan: no RoPE rows for %s (head size %d)",
                           T(op.outputs[0]).name, op.params.head_dim);
    }
    *out = Region{Slot::kRopeRows, e->offset, rope.EntryBytes(*e), "rope rows"};
    return Status::Ok();
  }

  // One binding over a q4 cache's k and v rings, and the v ring's offset from the k ring's in
  // words: where the attention shaders' b6 holds a Sink cache's query turn. The planner places
  // a layer's cache tensors one after another, so the range is the two rings.
  Status BothRings(uint32_t k_ring, uint32_t v_ring, Region* out, uint32_t* v_words) const {
    const TensorRegion& k = T(k_ring);
    const TensorRegion& v = T(v_ring);
    if (k.buffer != v.buffer || v.offset < k.offset + k.bytes() || (v.offset - k.offset) % 4 != 0) {
      return Status::Error(StatusCode::kUnsupported,
                           "Vulkan: the q4 rings %s and %s of a Sink cache are not one after the "
                           "other in one buffer",
                           k.name, v.name);
    }
    *out = Region{static_cast<Slot>(k.buffer), k.offset, v.offset + v.bytes() - k.offset, k.name};
    *v_words = static_cast<uint32_t>((v.offset - k.offset) / 4);
    return Status::Ok();
  }

  // The loop iterations an attention invocation may run: 15/16 of the budget, a margin for
  // loops the counts in vk_loop_budget.cpp might miss.
  uint64_t LoopAllowance() const {
    return options.loop_budget == 0 ? UINT64_MAX : options.loop_budget - options.loop_budget / 16;
  }

  // The bindings and push constants attention_split and attention_tiled share (b3 and e are
  // each its own).
  Status AttentionCommon(const Op& op, const char* shader, Dispatch** out) {
    const TensorRegion& cache = T(op.inputs[1]);
    const OpParams& p = op.params;
    Region table;
    if (p.cache_policy == CachePolicy::kSink) STATICLM_RETURN_IF_ERROR(RopeRegion(op, &table));
    Dispatch& s = Add(shader);
    s.bind[0] = R(op.inputs[0]);
    s.bind[1] = R(op.inputs[1]);
    s.bind[2] = R(op.inputs[2]);
    KvLayout layout = GetKvLayout(p.kv_quant);
    if (layout.attention_side >= 0) {
      s.bind[4] = R(op.inputs[layout.attention_side]);
      s.bind[5] = R(op.inputs[layout.attention_side + 1]);
    }
    s.bind[6] = table;
    if (layout.attention_recent >= 0 && p.cache_policy == CachePolicy::kSink) {
      // q4 with sinks: b6 is the sinks' query turn, so b7 covers both rings (kv_read.glsl).
      STATICLM_RETURN_IF_ERROR(BothRings(op.inputs[layout.attention_recent],
                                         op.inputs[layout.attention_recent + 1], &s.bind[7],
                                         &s.pc.j));
    } else if (layout.attention_recent >= 0) {  // q4
      s.bind[6] = R(op.inputs[layout.attention_recent]);
      s.bind[7] = R(op.inputs[layout.attention_recent + 1]);
    }
    s.pc.rows = StepRows(op, T(op.outputs[0]));
    s.pc.a = static_cast<uint32_t>(p.n_heads);
    s.pc.b = static_cast<uint32_t>(p.n_kv_heads);
    s.pc.c = static_cast<uint32_t>(p.head_dim);
    s.pc.d = static_cast<uint32_t>(cache.shape[1]);
    s.pc.fa = p.scale;
    CachePushConstants(p, &s.pc);
    *out = &s;
    return Status::Ok();
  }

  Status Attention(const Op& op) {
    const TensorRegion& cache = T(op.inputs[1]);
    const char* type = nullptr;
    STATICLM_RETURN_IF_ERROR(CheckCache(op, cache, &type));
    const OpParams& p = op.params;
    const TensorRegion& o = T(op.outputs[0]);
    uint64_t rows = static_cast<uint64_t>(o.shape[0]);
    uint64_t heads = static_cast<uint64_t>(p.n_heads);
    const int hd_variant = p.head_dim <= 64 ? 64 : (p.head_dim <= 128 ? 128 : kMaxHeadDim);
    // Prefill (rows of one sequence): tiled, a workgroup per tile of rows and KV head. A CPU
    // device (matmul style 0) runs a workgroup per thread: larger ones load each key tile for
    // more rows; a GPU gets more, smaller workgroups.
    const uint32_t group = options.matmul_style == 1 ? 64 : 128;  // WG in attention_tiled.comp
    uint64_t group_heads = heads / static_cast<uint64_t>(p.n_kv_heads);
    // Every key of a span is a few loop iterations of one invocation: where llvmpipe's loop
    // budget (vk_loop_budget.h) could run out, prefill takes the split kernel, whose parts
    // are sized below to stay within it. No span is longer than the cache's slots.
    AttentionLoopShape shape{hd_variant, p.kv_quant == KvQuant::kQ8,
                             static_cast<uint64_t>(p.sinks)};
    const uint64_t keys = static_cast<uint64_t>(cache.shape[1]);
    const uint64_t allowance = LoopAllowance();
    const bool tiled_fits =
        options.force_tiled_attention || TiledLoopIterations(shape, keys, group) <= allowance;
    if (rows > 1 && !plan.limits.rows_are_sequences && group_heads <= group && tiled_fits) {
      char shader[40];
      std::snprintf(shader, sizeof(shader), "attention_tiled_%s_hd%d_w%u", type, hd_variant, group);
      Dispatch* t = nullptr;
      STATICLM_RETURN_IF_ERROR(AttentionCommon(op, shader, &t));
      t->bind[3] = R(op.outputs[0]);
      uint64_t tile_rows = group / group_heads;
      return Groups(*t, CeilDiv(rows, tile_rows), static_cast<uint64_t>(p.n_kv_heads), op);
    }
    uint64_t splits = std::clamp<uint64_t>(options.attention_splits_budget / (rows * heads), 1, 64);
    uint64_t needed = SplitsWithinBudget(shape, keys, allowance);
    if (needed == 0 || needed > kMaxAttentionSplits) {
      return Status::Error(StatusCode::kUnsupported,
                           "Vulkan: attention over %llu keys of head size %d cannot be split "
                           "into at most %llu parts within the device's loop budget (%llu "
                           "iterations per invocation)",
                           static_cast<unsigned long long>(keys), p.head_dim,
                           static_cast<unsigned long long>(kMaxAttentionSplits),
                           static_cast<unsigned long long>(options.loop_budget));
    }
    splits = std::max(splits, needed);
    uint64_t hd = static_cast<uint64_t>(p.head_dim);
    uint64_t scratch = rows * heads * splits * (hd + 2) * sizeof(float);
    *scratch_bytes = std::max(*scratch_bytes, scratch);
    char shader[40];
    std::snprintf(shader, sizeof(shader), "attention_split_%s_hd%d", type, hd_variant);
    Dispatch* split = nullptr;
    STATICLM_RETURN_IF_ERROR(AttentionCommon(op, shader, &split));
    Dispatch& s = *split;
    s.bind[3] = Region{Slot::kScratch, 0, scratch, "attention scratch"};
    s.pc.e = static_cast<uint32_t>(splits);
    STATICLM_RETURN_IF_ERROR(Groups(s, CeilDiv(rows * heads * splits, kGroup), 1, op));
    PushConstants pc = s.pc;  // copied before Add() may move the vector
    Dispatch& c = Add("attention_combine");
    c.bind[0] = Region{Slot::kScratch, 0, scratch, "attention scratch"};
    c.bind[1] = R(op.outputs[0]);
    c.pc = pc;
    return Groups(c, CeilDiv(rows * heads * hd, kGroup), 1, op);
  }

  Status Rope(const Op& op) {
    const OpParams& p = op.params;
    Region rows;
    STATICLM_RETURN_IF_ERROR(RopeRegion(op, &rows));
    const TensorRegion& x = T(op.outputs[0]);
    Dispatch& d = Add("rope");
    d.bind[0] = R(op.outputs[0]);
    d.bind[1] = rows;
    d.pc.rows = StepRows(op, x);
    d.pc.a = static_cast<uint32_t>(x.shape[1] / p.head_dim);
    d.pc.b = static_cast<uint32_t>(p.head_dim);
    d.pc.d = p.rope_halves ? 1u : 0u;
    d.pc.e = static_cast<uint32_t>(RopeDims(p));
    return Groups(d, CeilDiv(RopePairs(x, p), kGroup), 1, op);
  }

  // The pairs a rope op turns in x: RopeDims / 2 per head of every row.
  static uint64_t RopePairs(const TensorRegion& x, const OpParams& p) {
    return static_cast<uint64_t>(x.shape[0]) * static_cast<uint64_t>(x.shape[1] / p.head_dim) *
           static_cast<uint64_t>(RopeDims(p) / 2);
  }

  // Two RoPE ops in a row with the same rows and configuration on different tensors (the
  // queries, then the keys) run as one dispatch: on a CPU device every dispatch costs a
  // round of thread wake-ups.
  bool CanPairRope(const Op& a, const Op& b) const {
    if (a.kind != OpKind::kRope || b.kind != OpKind::kRope ||
        a.params.rope_halves != b.params.rope_halves) {
      return false;
    }
    const RopeRows::Entry* e = rope.Find(plan, a);
    const TensorRegion& x = T(a.outputs[0]);
    const TensorRegion& y = T(b.outputs[0]);
    bool apart = x.buffer != y.buffer || x.offset + x.bytes() <= y.offset ||
                 y.offset + y.bytes() <= x.offset;
    return e != nullptr && e == rope.Find(plan, b) && a.params.head_dim == b.params.head_dim &&
           a.params.rope_dims == b.params.rope_dims &&
           a.params.rows_from_step == b.params.rows_from_step && x.shape[0] == y.shape[0] && apart;
  }

  Status RopePair(const Op& a, const Op& b) {
    STATICLM_RETURN_IF_ERROR(Rope(a));
    Dispatch& d = out->back();
    const TensorRegion& y = T(b.outputs[0]);
    d.bind[2] = R(b.outputs[0]);
    d.pc.c = static_cast<uint32_t>(y.shape[1] / b.params.head_dim);
    const uint64_t pairs = RopePairs(T(a.outputs[0]), a.params) + RopePairs(y, b.params);
    return Groups(d, CeilDiv(pairs, kGroup), 1, a);
  }

  Status Translate(const Op& op) {
    const TensorRegion& y = T(op.outputs[0]);
    uint64_t count = static_cast<uint64_t>(y.elements());
    uint32_t width = static_cast<uint32_t>(y.shape[1]);
    switch (op.kind) {
      case OpKind::kEmbed:
        return Embed(op);
      case OpKind::kRmsNorm:
        return RmsNorm(op, op.inputs[0], op.inputs[1], op.outputs[0]);
      case OpKind::kMatMul:
        return MatMul(op);
      case OpKind::kRope:
        return Rope(op);
      case OpKind::kKvStore:
        return KvStore(op);
      case OpKind::kAttention:
        return Attention(op);
      case OpKind::kAdd:
        return Elementwise(op, "add", op.outputs[0], op.inputs[0], count, width);
      case OpKind::kSiluMul:
        return Elementwise(op, "silu_mul", op.outputs[0], op.inputs[0], count, width);
      case OpKind::kGeluMul:
        return Elementwise(op, "gelu_mul", op.outputs[0], op.inputs[0], count, width);
      case OpKind::kAddBias:  // b0 x, b1 the bias (one row, repeated on every row)
        return Elementwise(op, "add_bias", op.outputs[0], op.inputs[0], count, width);
      case OpKind::kTakeLast: {
        Dispatch& d = Add("take_last");
        d.bind[0] = R(op.inputs[0]);
        d.bind[1] = R(op.outputs[0]);
        d.pc.a = static_cast<uint32_t>(T(op.inputs[0]).shape[1]);
        return Groups(d, CeilDiv(d.pc.a, kGroup), 1, op);
      }
    }
    return Status::Error(StatusCode::kUnsupported, "Vulkan: unknown op kind");
  }
};

}  // namespace

bool UnitBindingOffset(uint64_t offset, uint64_t align, uint64_t unit, uint64_t* binding_offset) {
  if (align == 0 || unit == 0) return false;
  uint64_t candidate = offset - offset % align;
  // Candidates' distances from `offset` repeat modulo `unit` within `unit` steps.
  for (uint64_t step = 0; step <= unit; ++step) {
    if ((offset - candidate) % unit == 0) {
      *binding_offset = candidate;
      return true;
    }
    if (candidate < align) return false;
    candidate -= align;
  }
  return false;
}

Status TranslatePlan(const Plan& plan, const RopeRows& rope, const DispatchOptions& options,
                     std::vector<Dispatch>* out, uint64_t* scratch_bytes) {
  // The uniform block holds the rows of a batched step (shaders/common.glsl).
  if (plan.limits.rows_are_sequences && plan.limits.prefill_chunk > kMaxBatch) {
    return Status::Error(StatusCode::kUnsupported,
                         "Vulkan backend: a batched plan has at most %d rows (this one %d)",
                         kMaxBatch, plan.limits.prefill_chunk);
  }
  Translator t{plan, rope, options, out, scratch_bytes};
  for (size_t i = 0; i < plan.ops.size(); ++i) {
    const size_t first = out->size();
    uint32_t ops = 1;
    if (i + 1 < plan.ops.size() && t.CanPairRope(plan.ops[i], plan.ops[i + 1])) {
      STATICLM_RETURN_IF_ERROR(t.RopePair(plan.ops[i], plan.ops[i + 1]));
      ops = 2;
    } else {
      STATICLM_RETURN_IF_ERROR(t.Translate(plan.ops[i]));
    }
    for (size_t d = first; d < out->size(); ++d) {
      (*out)[d].op = static_cast<uint32_t>(i);
      (*out)[d].ops = ops;
    }
    i += ops - 1;
  }
  return Status::Ok();
}

}  // namespace staticlm::vulkan
