// The plan: the contract between the runtime (which builds it at init) and the backends
// (which prepare it at init and walk it every step). Plain data, no pointers: a tensor is a
// region of one of four buffers, which each backend binds to its own memory.
//
// Shapes are static maxima. What varies per step (how many tokens, their positions) is in
// StepParams, which kernels read; one plan serves every step.
#pragma once

#include <cstdint>
#include <vector>

#include "contract/dtype.h"

namespace staticlm {

enum class BufferId : uint8_t {
  kWeights = 0,  // the model's tensor data (the GGUF data section), read only
  kKvCache = 1,  // keys and values of every layer, sized by the limits
  kArena = 2,    // activations and scratch; offsets from the memory planner
  kIo = 3,       // step inputs (token ids) and outputs (logits), read and written by the host
};
constexpr int kBufferCount = 4;

const char* BufferName(BufferId id);

// Host addresses of the four buffers a plan refers to. Borrowed: the caller owns the memory,
// which must outlive the backend. The weights are read only.
struct BufferBinding {
  uint8_t* data[kBufferCount] = {nullptr, nullptr, nullptr, nullptr};
  uint64_t bytes[kBufferCount] = {0, 0, 0, 0};
};

// A tensor: `shape` is row-major with shape[0] outermost. Unused trailing dims are 1.
// Weight matrices are [out_features, in_features]; activations are [rows, width].
struct TensorRegion {
  BufferId buffer = BufferId::kArena;
  DType dtype = DType::kF32;
  uint32_t rank = 1;
  uint64_t offset = 0;  // bytes from the start of the buffer
  int64_t shape[4] = {1, 1, 1, 1};
  char name[48] = {0};  // for reports and errors, e.g. "blk.3.attn_q"

  int64_t elements() const { return shape[0] * shape[1] * shape[2] * shape[3]; }
  uint64_t bytes() const { return DTypeBytes(dtype, static_cast<uint64_t>(elements())); }
};

// Each kind's tensors, as Op::inputs → Op::outputs. In-place kinds list the tensor they
// update only as an output; it is read too.
enum class OpKind : uint8_t {
  kEmbed,  // table [vocab, d], tokens I32 [C]      → x F32 [C, d] = table[tokens] · embed_scale
  kRmsNorm,  // x [R, d], weight F32 [d]              → y [R, d]
             // (norm_group > 0: each norm_group-wide group of a row is normalised on its own,
             // with weight F32 [norm_group]: Gemma 3's and Qwen 3's norm of q and k per head)
  kMatMul,   // x F32 [R, k], w [n, k]                → y F32 [R, n] = x · wᵀ
             // (fused forms: see MatMulLayout below)
  kRope,  // [freq factors F32 [head_dim / 2]]       → x [C, heads · head_dim], rotated in place
          // (with the factors, pair i's frequency is divided by factor i: Llama 3's
          // rope_freqs, Phi-3's longrope short or long factors; see OpParams::rope_scale)
  kKvStore,    // k, v [C, kv_heads · head_dim]         → k cache, v cache of one layer
               // (+ the quantized caches' side tensors: see KvLayout below)
  kAttention,  // q [C, heads · hd], k cache, v cache, scores F32 [heads, slots] → o [C, heads ·
               // hd] (+ side tensors after scores: see KvLayout below; + the layer's RoPE
               // frequency factors last, for a sink cache: AttentionFactorsInput)
  kAdd,        // b [R, d]                              → a [R, d] += b
  kSiluMul,    // up [R, f]                             → gate [R, f] = silu(gate) · up
  kTakeLast,   // x [C, d]                              → y [1, d] = x[n_tokens − 1]
  kGeluMul,    // up [R, f]                             → gate [R, f] = gelu(gate) · up, GELU's
               // tanh approximation (Gemma's GeGLU)
  kAddBias,    // bias F32 [d]                          → x [R, d] += bias, on every row
               // (Qwen 2's q, k and v biases)
};
const char* OpKindName(OpKind kind);

// How a layer's cache maps positions to slots and which positions a query attends to
// (DESIGN.md, "KV cache policies"). R is OpParams::cache_slots, W window, S sinks.
enum class CachePolicy : uint8_t {
  kStatic = 0,         // slot p; attends 0 … p (R = max_context, p < R)
  kSlidingWindow = 1,  // slot p mod R, R ≥ W + C − 1; attends p−W+1 … p (Mistral)
  kSink = 2,           // slot p < F ? p : F + (p−F) mod (R−F), F = S (q4: S rounded up
                       // to kv_group: kv_policy.h SinkSlots), R−F ≥ W−S+C−1; attends the S
                       // sinks and the last W−S positions, at positions inside the cache
                       // (StreamingLLM): the sinks are scored with the query rotated to the
                       // position it has in the cache, the same scores re-rotated keys give
};
const char* CachePolicyName(CachePolicy policy);

// How a layer's cache stores keys and values.
enum class KvQuant : uint8_t {
  kNone = 0,  // k, v caches of F16 or F32 [kv_heads, R, head_dim]
  kQ8 = 1,    // I8 caches [kv_heads, R, head_dim], value = q · scale, an F32 scale per token and
              // head: side tensors k_scale, v_scale [kv_heads, R]. Rows are stored rotated by
              // the normalised Hadamard transform (a head_dim not a power of two in blocks of
              // its binary digits, largest first: 96 = 64 + 32; backends/cpu/hadamard.h):
              // attention rotates the query into that basis and its output back
  kQ4 = 2,    // KIVI: KV_Q4 caches [kv_heads, R, head_dim] (R a multiple of kv_group); keys
              // per channel over groups of kv_group tokens (k_params F32 [kv_heads, R / group,
              // 2, head_dim]: scale, min), values per token (v_params F32 [kv_heads, R, 2]);
              // the tokens of the last, incomplete group in full precision in F32 rings
              // k_recent, v_recent [kv_heads, recent_slots, head_dim], slot p mod recent_slots
};
const char* KvQuantName(KvQuant quant);

// Parameters an op's kernel needs besides its tensors. Fields not used by a kind are zero.
struct OpParams {
  int32_t layer = -1;
  int32_t n_heads = 0;
  int32_t n_kv_heads = 0;
  int32_t head_dim = 0;
  float eps = 0.0f;  // RMSNorm epsilon
  // kRmsNorm: 0 normalises whole rows; > 0 each group of that many elements (a head) alone.
  int32_t norm_group = 0;
  float rope_base = 0.0f;  // RoPE theta base
  // kRope: false rotates adjacent pairs (x[2i], x[2i+1]), the layout GGUF stores Llama's q and k
  // in; true rotates halves (x[i], x[i + head_dim/2]), Hugging Face's rotate-half, the layout of
  // architectures whose converter does not permute (Gemma, Qwen 2, Phi 3: llama.cpp's "neox").
  // kAttention with a Sink cache: how the query turned for the sinks pairs its elements (the
  // layer's kRope's pairing); false on other caches.
  bool rope_halves = false;
  // kRope (and a Sink cache's kAttention): partial RoPE turns only the first rope_dims elements
  // of each head (even, < head_dim; Phi-4-mini's partial_rotary_factor, GGUF
  // <arch>.rope.dimension_count): its pairs and frequencies are those of a head of rope_dims,
  // halves meaning (x[i], x[i + rope_dims/2]), and the rest pass through. 0: the whole head.
  // RopeDims() reads it.
  int32_t rope_dims = 0;
  // kRope: cos and sin are multiplied by this (Phi-3 longrope's attention factor, transformers'
  // attention_scaling; llama.cpp's attn_factor); 1 leaves the rotation a rotation.
  float rope_scale = 1.0f;
  float scale = 0.0f;  // kAttention: the score scale, 1/sqrt(head_dim)
  // kEmbed: the factor every embedding row is multiplied by (sqrt(d) for Gemma).
  float embed_scale = 1.0f;
  // true: the op processes the step's n_tokens rows; false: every row of its output shape.
  bool rows_from_step = true;
  // kMatMul fusions (plan passes in runtime/plan/fusion_passes.h):
  uint8_t n_weights = 1;    // products sharing the input x: 1..3 (e.g. Q, K and V)
  bool norm_input = false;  // x is RMS-normalised (weight, eps) before the products
  bool silu_mul = false;    // with 2 weights: y0 = silu(y0) · y1 afterwards
  bool accumulate = false;  // with 1 weight: acc += y0 afterwards (a residual add)
  // kKvStore and kAttention: the layer's cache policy (see CachePolicy, KvQuant).
  CachePolicy cache_policy = CachePolicy::kStatic;
  KvQuant kv_quant = KvQuant::kNone;
  int32_t window = 0;        // W (kSlidingWindow, kSink), sinks included
  int32_t sinks = 0;         // S (kSink)
  int32_t cache_slots = 0;   // R: slots per KV head, the caches' dim 1
  int32_t kv_group = 0;      // kQ4: tokens per key group
  int32_t recent_slots = 0;  // kQ4: slots of the full-precision rings, ≥ kv_group + C − 1
};

constexpr int kMaxOpInputs = 8;
constexpr int kMaxOpOutputs = 8;

// Where kKvStore's outputs and kAttention's inputs are, given kv_quant:
//   kKvStore:   outputs k cache, v cache, [k side, v side], [k recent, v recent]
//   kAttention: inputs  q, k cache, v cache, scores, [k side, v side], [k recent, v recent]
// "side" is k_scale/v_scale (kQ8) or k_params/v_params (kQ4). Each index names the k tensor
// and the v tensor follows it; −1 when absent.
struct KvLayout {
  int store_side, store_recent;          // in kKvStore's outputs
  int attention_side, attention_recent;  // in kAttention's inputs
  int count;                             // cache tensors in all: 2, 4 or 6
};
KvLayout GetKvLayout(KvQuant quant);

// The elements of each head that RoPE turns (OpParams::rope_dims, or the whole head).
inline int32_t RopeDims(const OpParams& p) {
  return p.rope_dims > 0 ? p.rope_dims : p.head_dim;
}

// The input index of a kAttention's RoPE frequency factors (F32 [RopeDims / 2], the kRope ops'
// of its layer), or −1 without: a sink cache scores its sinks with the query turned back to its
// position inside the cache, which must turn by the same frequencies the keys did.
int AttentionFactorsInput(const struct Op& op);

// Where a kMatMul's tensors are, given its fusion flags:
//   inputs:  x, w0 … w(n−1), [norm weight if norm_input]
//   outputs: y0 … y(n−1), [normalised x if norm_input], [acc if accumulate]
struct MatMulLayout {
  int n_weights, norm_weight_input, normed_output, acc_output;  // −1 when absent
  int inputs, outputs;
};
MatMulLayout GetMatMulLayout(const struct OpParams& p);

struct Op {
  OpKind kind = OpKind::kAdd;
  uint8_t n_inputs = 0;
  uint8_t n_outputs = 0;
  uint32_t inputs[kMaxOpInputs] = {0};    // indices into Plan::tensors
  uint32_t outputs[kMaxOpOutputs] = {0};  // indices into Plan::tensors
  OpParams params;
};

// The most sequences one context holds (PlanLimits::max_batch).
constexpr int32_t kMaxBatch = 64;

// The limits a plan was built for; the only source of sizes.
struct PlanLimits {
  int32_t max_context = 0;       // cache positions per sequence
  int32_t max_batch = 1;         // sequences, each with its own cache
  int32_t prefill_chunk = 0;     // most tokens (rows) per step
  DType kv_dtype = DType::kF16;  // F16, F32, I8 (q8) or KV_Q4 (q4)
  // Cache policy of the plan's layers: window 0 is Static everywhere. window > 0: the windowed
  // layers use SlidingWindow(window), or Sink(sinks, window) when sinks > 0; with
  // global_every > 1, layer i is global when (i + 1) % global_every == 0, and Static unless
  // global_window > 0: then the global layers use Sink(sinks, global_window) and the sinks are
  // theirs alone, the windowed layers sliding without (a hybrid model's endless mode: Gemma 3's
  // global layers bounded, its sliding layers at the model's window).
  int32_t window = 0;
  int32_t sinks = 0;
  int32_t global_every = 0;
  int32_t global_window = 0;
  // The chunk the ring caches are sized for (W + cache_chunk − 1 slots): the prefill chunk of
  // the largest plan sharing the cache, so a decode plan and a prefill plan share one layout.
  int32_t cache_chunk = 0;
  // The batched decode plan: each row of a step is the next token of its own sequence, at its
  // own position (StepParams::row_sequences, row_positions), and every row gets logits. Else
  // the rows are consecutive tokens of one sequence and only the last gets logits.
  bool rows_are_sequences = false;
};

// Tokens one step can add to one sequence: what sizes a ring cache's margin.
inline int32_t TokensPerSequence(const PlanLimits& l) {
  return l.rows_are_sequences ? 1 : l.prefill_chunk;
}

struct Plan {
  PlanLimits limits;
  std::vector<TensorRegion> tensors;
  std::vector<Op> ops;
  uint64_t buffer_bytes[kBufferCount] = {0};
  uint32_t tokens_tensor = 0;  // io: I32 [prefill_chunk]
  // io: F32 [1, vocab], logits of the step's last token; [max_batch, vocab], one row per step
  // row, when rows_are_sequences.
  uint32_t logits_tensor = 0;
};

// True when no layer of the plan has a Static cache: positions then go on without bound.
bool PlanPositionsUnbounded(const Plan& plan);

// What changes from step to step. Every cache tensor holds max_batch sequences, sequence s in
// the s-th of max_batch equal parts (its dim 0 is max_batch · kv_heads).
//  - A plan whose rows are one sequence's tokens: they are at positions position … position +
//    n_tokens − 1 of sequence `sequence`; the row arrays are unused.
//  - A rows_are_sequences plan: row r is the next token of sequence row_sequences[r] (distinct)
//    at position row_positions[r]; both arrays have n_tokens entries and are borrowed for the
//    Execute call.
struct StepParams {
  int32_t n_tokens = 0;
  int32_t position = 0;
  int32_t sequence = 0;
  const int32_t* row_sequences = nullptr;
  const int32_t* row_positions = nullptr;
};

}  // namespace staticlm
