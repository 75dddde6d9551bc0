// The plan: the contract between the runtime (which builds it at init) and the backends
// (which prepare it at init and walk it every step). Plain data, no pointers: a tensor is a
// region of one of four buffers, which each backend binds to its own memory.
//
// Shapes are static maxima. What varies per step (how many tokens, their positions) is in
// StepParams, which kernels read; one plan serves every step.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/dtype.h"

namespace staticlm {

enum class BufferId : uint8_t {
  kWeights = 0,  // the model's tensor data (the GGUF data section), read only
  kKvCache = 1,  // keys and values of every layer, sized by the limits
  kArena = 2,    // activations and scratch; offsets from the memory planner
  kIo = 3,       // step inputs (token ids) and outputs (logits), read and written by the host
};
constexpr int kBufferCount = 4;

const char* BufferName(BufferId id);

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
  kEmbed,    // table [vocab, d], tokens I32 [C]      → x F32 [C, d]
  kRmsNorm,  // x [R, d], weight F32 [d]              → y [R, d]
  kMatMul,   // x F32 [R, k], w [n, k]                → y F32 [R, n] = x · wᵀ
             // (fused forms: see MatMulLayout below)
  kRope,     // (none)                                → x [C, heads · head_dim], rotated in place
  kKvStore,  // k, v [C, kv_heads · head_dim]         → k cache, v cache of one layer
  kAttention,  // q [C, heads · hd], k cache, v cache, scores F32 [heads, capacity] → o [C, heads ·
               // hd]
  kAdd,       // b [R, d]                              → a [R, d] += b
  kSiluMul,   // up [R, f]                             → gate [R, f] = silu(gate) · up
  kTakeLast,  // x [C, d]                              → y [1, d] = x[n_tokens − 1]
};
const char* OpKindName(OpKind kind);

// Parameters an op's kernel needs besides its tensors. Fields not used by a kind are zero.
struct OpParams {
  int32_t layer = -1;
  int32_t n_heads = 0;
  int32_t n_kv_heads = 0;
  int32_t head_dim = 0;
  float eps = 0.0f;        // RMSNorm epsilon
  float rope_base = 0.0f;  // RoPE theta base
  float scale = 0.0f;      // attention score scale, 1/sqrt(head_dim)
  // true: the op processes the step's n_tokens rows; false: every row of its output shape.
  bool rows_from_step = true;
  // kMatMul fusions (plan passes in runtime/plan/fusion_passes.h):
  uint8_t n_weights = 1;    // products sharing the input x: 1..3 (e.g. Q, K and V)
  bool norm_input = false;  // x is RMS-normalised (weight, eps) before the products
  bool silu_mul = false;    // with 2 weights: y0 = silu(y0) · y1 afterwards
  bool accumulate = false;  // with 1 weight: acc += y0 afterwards (a residual add)
};

constexpr int kMaxOpInputs = 5;
constexpr int kMaxOpOutputs = 5;

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

// The limits a plan was built for; the only source of sizes.
struct PlanLimits {
  int32_t max_context = 0;    // cache positions per sequence
  int32_t max_batch = 1;      // sequences (only 1 is supported so far)
  int32_t prefill_chunk = 0;  // most tokens per step
  DType kv_dtype = DType::kF16;
};

struct Plan {
  PlanLimits limits;
  std::vector<TensorRegion> tensors;
  std::vector<Op> ops;
  uint64_t buffer_bytes[kBufferCount] = {0};
  uint32_t tokens_tensor = 0;  // io: I32 [prefill_chunk]
  uint32_t logits_tensor = 0;  // io: F32 [1, vocab], logits of the step's last token
};

// What changes from step to step. Tokens are at positions position … position + n_tokens − 1.
struct StepParams {
  int32_t n_tokens = 0;
  int32_t position = 0;
};

}  // namespace staticlm
