// kMatMul, every weight type, with its fusions (contract/plan.h's MatMulLayout): up to three
// weights sharing x, norm_input, silu_mul, accumulate; and, joined at capture (op_joins.cu), a
// GeGLU FFN's gate, up and gelu_mul ops as one gated product. A warp computes one output column:
// its lanes walk the weight row 32 consecutive elements at a time (one Q*_0/Q*_1 block, or one
// K-quant sub-block, per step: coalesced reads) and decode each element once for a tile of
// kRows rows of x. kRows = 1 is the matrix-vector kernel of decode steps; kRows = 8 the tiled
// matrix-matrix kernel of prefill chunks, which reads and decodes the weights once per 8 rows.
// Each is instantiated per weight type (kType), so that the decoder's type switch folds away;
// kAnyType decodes by the runtime type, for fused weights of differing types. norm_input is
// fused too, saving a launch: each warp computes its rows' RMS (a warp sum over x) and
// normalises x as it reads it; the first block column also writes the normalised x, the op's
// output.
#include "backends/cuda/kernels/block_decode.h"
#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/kernel_math.h"

namespace staticlm::cuda {
namespace {

constexpr int kWarpsPerBlock = 4;
constexpr int kAnyType = -1;

struct Weight {
  DType type;
  const uint8_t* data;
  uint64_t row_bytes;
  int32_t n_out;
  float* y;
};

// A gated product: w[0] (gate) and w[1] (up) in one warp, then y0 = act(y0) · y1. kSilu is a
// fused op's silu_mul; kGelu a GeGLU FFN's gate, up and gelu_mul ops (op_joins.cu) in one launch.
enum class Glu : int32_t { kNone, kSilu, kGelu };

__device__ inline float GluValue(Glu glu, float gate, float up) {
  return glu == Glu::kSilu ? SiluMulValue(gate, up) : GeluMulValue(gate, up);
}

struct MatMulArgs {
  const float* x;
  int32_t n_in;
  Weight w[3];
  Glu glu;
  float* acc;                // non-null: acc += y0
  int32_t first_weight;      // blockIdx.z counts from this weight
  const float* norm_weight;  // non-null: x is RMS-normalised (eps) with it first, into normed
  float* normed;
  float eps;
  RowForm form;
  int32_t rows_per_warp;  // MatVecKernel: rows each warp computes (1 or kWideRowsPerWarp)
};

// x as the products read it: as it is, or RMS-normalised (as ref::RmsNorm: x · inv_rms · w).
template <int kRows>
struct RowsOfX {
  const float* x;
  int32_t n_in;
  int32_t rows_here;
  const float* norm_weight;  // null: x as it is
  float inv_rms[kRows];

  __device__ float At(int r, int32_t i) const {
    const float v = x[static_cast<int64_t>(r) * n_in + i];
    return norm_weight == nullptr ? v : v * inv_rms[r] * norm_weight[i];
  }
};

template <int kRows>
__device__ RowsOfX<kRows> ReadRows(const MatMulArgs& a, int32_t first_row, int32_t rows_here) {
  RowsOfX<kRows> x{
      a.x + static_cast<int64_t>(first_row) * a.n_in, a.n_in, rows_here, a.norm_weight, {}};
  if (a.norm_weight == nullptr) return x;
  for (int r = 0; r < kRows; ++r) {
    float sum_squares = 0.0f;
    for (int32_t i = threadIdx.x % 32; r < rows_here && i < a.n_in; i += 32) {
      const float v = x.x[static_cast<int64_t>(r) * a.n_in + i];
      sum_squares += v * v;
    }
    sum_squares = WarpSum(sum_squares);
    x.inv_rms[r] = 1.0f / sqrtf(sum_squares / static_cast<float>(a.n_in) + a.eps);
  }
  return x;
}

// Σ w[o, i] · x[r, i] for the tile's rows, in every lane.
template <int kRows, int kType>
__device__ void DotColumn(const Weight& w, int32_t o, const RowsOfX<kRows>& x, float sums[kRows]) {
  const uint8_t* row = w.data + static_cast<uint64_t>(o) * w.row_bytes;
  const DType type = kType == kAnyType ? w.type : static_cast<DType>(kType);
  for (int r = 0; r < kRows; ++r) sums[r] = 0.0f;
    // Unrolled so that several iterations' weight loads are in flight at once: a decode step's
    // product is bound by load latency, not by bandwidth or arithmetic.
#pragma unroll 4
  for (int32_t i = threadIdx.x % 32; i < x.n_in; i += 32) {
    const float value = DecodeElement(type, row, i);
    for (int r = 0; r < kRows; ++r) {
      if (r < x.rows_here) sums[r] += value * x.At(r, i);
    }
  }
  for (int r = 0; r < kRows; ++r) sums[r] = WarpSum(sums[r]);
}

// Whether a decode product of weights of type kType takes DotRowByBlocks: Q4_0 and Q4_1. Measured
// on an H200 (bench/results/2026-11-26-h200-cuda.md): SmolLM2's Q4_1 layers gained with it,
// while Gemma 3's Q5_0 layers and Q8_0 output head (262,144 rows of 20 blocks, 12 lanes idle,
// 34 byte loads per lane) lost more, 2.7 -> 3.7 ms a step, so those keep a lane per element.
template <int kType>
constexpr bool kByBlocks =
    kType == static_cast<int>(DType::kQ4_0) || kType == static_cast<int>(DType::kQ4_1);

// Σ w[o, i] · x[0, i] for a decode step (one row), in every lane, for weights of 32-element
// blocks: a lane per block (lane, lane + 32, …), each reading its block's bytes and its 32
// values of x at once. Walking the row a block per lane instead of an element per lane puts a
// whole row's loads in flight in one or two rounds (a row of 576 is 18 blocks) instead of one
// round per 32 elements, which is what bounds a decode step's small products.
template <int kType>
__device__ float DotRowByBlocks(const Weight& w, int32_t o, const RowsOfX<1>& x) {
  constexpr DType type = static_cast<DType>(kType);
  const uint8_t* row = w.data + static_cast<uint64_t>(o) * w.row_bytes;
  const int32_t blocks = x.n_in / 32;
  float sum = 0.0f;
  for (int32_t b = threadIdx.x % 32; b < blocks; b += 32) {
    const uint8_t* block = row + static_cast<uint64_t>(b) * BlockBytes(type);
    float partial = 0.0f;
#pragma unroll
    for (int j = 0; j < 32; ++j) partial += DecodeInBlock(type, block, j) * x.At(0, 32 * b + j);
    sum += partial;
  }
  return WarpSum(sum);
}

// One row's product by the kernel's path for kType (see DotColumn and DotRowByBlocks).
template <int kRows, int kType>
__device__ void DotColumnFor(const Weight& w, int32_t o, const RowsOfX<kRows>& x,
                             float sums[kRows]) {
  if constexpr (kRows == 1 && kByBlocks<kType>) {
    sums[0] = DotRowByBlocks<kType>(w, o, x);
  } else {
    DotColumn<kRows, kType>(w, o, x, sums);
  }
}

// The normalised x, the op's output, written once: by the first warp of the first column.
template <int kRows>
__device__ void WriteNormed(const MatMulArgs& a, const RowsOfX<kRows>& x, int32_t first_row) {
  if (a.normed == nullptr || blockIdx.x != 0 || blockIdx.z + a.first_weight != 0 ||
      threadIdx.x >= 32) {
    return;
  }
  for (int r = 0; r < x.rows_here; ++r) {
    for (int32_t i = threadIdx.x; i < a.n_in; i += 32) {
      a.normed[static_cast<int64_t>(first_row + r) * a.n_in + i] = x.At(r, i);
    }
  }
}

template <int kRows, int kType>
__global__ void MatMulKernel(MatMulArgs a, const StepValues* step) {
  StartAfterPreviousKernels();
  const int32_t first_row = blockIdx.y * kRows;
  const int32_t rows = StepRows(step, a.form);
  const Weight& w = a.w[a.first_weight + blockIdx.z];
  const int32_t o = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  if (first_row >= rows || o >= w.n_out) return;
  const int32_t rows_here = rows - first_row < kRows ? rows - first_row : kRows;
  const RowsOfX<kRows> x = ReadRows<kRows>(a, first_row, rows_here);
  WriteNormed<kRows>(a, x, first_row);
  float y[kRows], up[kRows];
  DotColumnFor<kRows, kType>(w, o, x, y);
  if (a.glu != Glu::kNone) DotColumnFor<kRows, kType>(a.w[1], o, x, up);
  if (threadIdx.x % 32 != 0) return;
  for (int r = 0; r < rows_here; ++r) {
    const int64_t at = static_cast<int64_t>(first_row + r) * w.n_out + o;
    if (a.glu != Glu::kNone) {
      a.w[1].y[at] = up[r];
      y[r] = GluValue(a.glu, y[r], up[r]);
    }
    w.y[at] = y[r];
    if (a.acc != nullptr) a.acc[at] += y[r];
  }
}

// The decode step's product (one row of x), MatVecKernel: the row of weights a warp reads
// travels in chunks of whole blocks, at most kChunkBytes, through shared memory. The warp loads
// a chunk with coalesced 4-byte loads (8 a lane), stores it in its slice of shared memory and
// decodes it there a lane per element (the same DecodeElement as DotColumn); x, normalised once
// per block, waits in shared memory too. The first chunk is loaded before the kernel waits for
// the one before it (weights never change), so with programmatic launch the loads of a product's
// weights overlap the previous kernel; each next chunk is loaded while the current one is
// decoded. A warp computes kRowsPerWarp consecutive rows (more than one for output heads, below),
// loading every row's first chunk at once.
constexpr int kChunkWords = 256;
constexpr int kChunkBytes = 4 * kChunkWords;
constexpr int kWordsPerLane = kChunkWords / 32;
constexpr int32_t kMatVecMaxInputs = 16384;  // x in shared memory: 64 KiB
// A product with this many rows or more (an output head: 49,152 for SmolLM2, 262,144 for
// Gemma 3) gives each warp kWideRowsPerWarp rows, whose first chunks it loads at once: more
// loads in flight per warp, and a quarter of the blocks, each staging x once. Measured on an H100
// (bench/results/2026-11-26c-h100-cuda.md): Gemma 3's decode +5 %, SmolLM2's +1 %; 8 rows a warp
// was no faster than 4 and takes 125 registers a thread. Narrower products keep a row per warp
// (54 registers), so that their few hundred rows still spread over every SM.
constexpr int32_t kWideProductRows = 16384;
constexpr int kWideRowsPerWarp = 4;
constexpr size_t kMatVecMaxSharedBytes =
    kWarpsPerBlock * kChunkBytes + kMatVecMaxInputs * sizeof(float);

// The chunk of a weight type: the most whole blocks in kChunkBytes whose size is a multiple of 4.
struct Chunking {
  int32_t bytes;     // of a whole chunk
  int32_t elements;  // of a whole chunk
};

STATICLM_HD inline Chunking ChunkingOf(DType type) {
  const int block_bytes = BlockBytes(type);
  int blocks = kChunkBytes / block_bytes;
  while (blocks > 1 && (blocks * block_bytes) % 4 != 0) --blocks;
  return {blocks * block_bytes, blocks * BlockElements(type)};
}

// Words [0, n_words) of chunk `c` of row o of w into the lane's registers (word lane + 32·k).
__device__ inline void LoadChunk(const Weight& w, int32_t o, int32_t c, Chunking k,
                                 uint32_t words[kWordsPerLane]) {
  const uint8_t* row = w.data + static_cast<uint64_t>(o) * w.row_bytes;
  const int64_t first = static_cast<int64_t>(c) * k.bytes;
  const int32_t n_words =
      static_cast<int32_t>((w.row_bytes - first < k.bytes ? w.row_bytes - first : k.bytes) / 4);
  const uint32_t* from = reinterpret_cast<const uint32_t*>(row + first);
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int j = 0; j < kWordsPerLane; ++j) {
    if (lane + 32 * j < n_words) words[j] = __ldg(from + lane + 32 * j);
  }
}

// Σ over chunk c of row o (its words in `words`, staged through `stage`) · x, this lane's share.
template <int kType>
__device__ inline float DotChunk(const Weight& w, int32_t c, Chunking k,
                                 const uint32_t words[kWordsPerLane], uint32_t* stage,
                                 const float* xs, int32_t n_in) {
  const DType type = kType == kAnyType ? w.type : static_cast<DType>(kType);
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int j = 0; j < kWordsPerLane; ++j) stage[lane + 32 * j] = words[j];
  __syncwarp();
  const int32_t first = c * k.elements;
  const int32_t count = n_in - first < k.elements ? n_in - first : k.elements;
  const uint8_t* bytes = reinterpret_cast<const uint8_t*>(stage);
  float sum = 0.0f;
#pragma unroll 4
  for (int32_t i = lane; i < count; i += 32) sum += DecodeElement(type, bytes, i) * xs[first + i];
  __syncwarp();  // the stage is overwritten by the next chunk
  return sum;
}

// Σ w[o, i] · x[i], in every lane; `words` holds chunk 0, already loaded.
template <int kType>
__device__ float DotRowStaged(const Weight& w, int32_t o, uint32_t words[kWordsPerLane],
                              uint32_t* stage, const float* xs, int32_t n_in) {
  const Chunking k = ChunkingOf(kType == kAnyType ? w.type : static_cast<DType>(kType));
  const int32_t chunks = (n_in + k.elements - 1) / k.elements;
  float sum = 0.0f;
  for (int32_t c = 0; c < chunks; ++c) {
    uint32_t next[kWordsPerLane] = {};
    if (c + 1 < chunks) LoadChunk(w, o, c + 1, k, next);  // in flight during this chunk's sums
    sum += DotChunk<kType>(w, c, k, words, stage, xs, n_in);
#pragma unroll
    for (int j = 0; j < kWordsPerLane; ++j) words[j] = next[j];
  }
  return WarpSum(sum);
}

// x (RMS-normalised when the op says so, as RowsOfX::At) into shared memory, by the whole block;
// the first block of the first weight also writes the normalised x, the op's output.
__device__ void StageX(const MatMulArgs& a, float* xs) {
  float inv_rms = 1.0f;
  if (a.norm_weight != nullptr) {
    float sum_squares = 0.0f;
    for (int32_t i = threadIdx.x; i < a.n_in; i += blockDim.x) sum_squares += a.x[i] * a.x[i];
    sum_squares = BlockSum(sum_squares);
    inv_rms = 1.0f / sqrtf(sum_squares / static_cast<float>(a.n_in) + a.eps);
  }
  const bool write_normed =
      a.normed != nullptr && blockIdx.x == 0 && blockIdx.z + a.first_weight == 0;
  for (int32_t i = threadIdx.x; i < a.n_in; i += blockDim.x) {
    const float v = a.norm_weight == nullptr ? a.x[i] : a.x[i] * inv_rms * a.norm_weight[i];
    xs[i] = v;
    if (write_normed) a.normed[i] = v;
  }
  __syncthreads();
}

template <int kType, int kRowsPerWarp>
__global__ void MatVecKernel(MatMulArgs a, const StepValues* step) {
  extern __shared__ uint32_t shared[];  // kWarpsPerBlock stages of kChunkWords, then x
  const Weight& w = a.w[a.first_weight + blockIdx.z];
  const int warp = threadIdx.x / 32;
  const int32_t first = (blockIdx.x * kWarpsPerBlock + warp) * kRowsPerWarp;  // warp's 1st row
  // Gated products take a row per warp (EnqueueMatMul): up_words holds one row's chunk.
  const bool gated = kRowsPerWarp == 1 && a.glu != Glu::kNone;
  const Chunking k = ChunkingOf(kType == kAnyType ? w.type : static_cast<DType>(kType));
  uint32_t words[kRowsPerWarp][kWordsPerLane] = {}, up_words[kWordsPerLane] = {};
#pragma unroll
  for (int j = 0; j < kRowsPerWarp; ++j) {
    if (first + j < w.n_out) LoadChunk(w, first + j, 0, k, words[j]);
  }
  if (first < w.n_out && gated) {
    LoadChunk(a.w[1], first, 0,
              ChunkingOf(kType == kAnyType ? a.w[1].type : static_cast<DType>(kType)), up_words);
  }
  StartAfterPreviousKernels();
  const bool writes_normed =
      a.normed != nullptr && blockIdx.x == 0 && blockIdx.z + a.first_weight == 0;
  if (StepRows(step, a.form) < 1) return;
  // A block of rows past this weight's (the fused weights' n_out differ) has nothing to do.
  if (blockIdx.x * kWarpsPerBlock * kRowsPerWarp >= w.n_out && !writes_normed) return;
  float* xs = reinterpret_cast<float*>(shared + kWarpsPerBlock * kChunkWords);
  StageX(a, xs);
  uint32_t* stage = shared + warp * kChunkWords;
#pragma unroll
  for (int j = 0; j < kRowsPerWarp; ++j) {
    const int32_t o = first + j;
    if (o >= w.n_out) break;
    float y = DotRowStaged<kType>(w, o, words[j], stage, xs, a.n_in);
    if (gated) {
      const float up = DotRowStaged<kType>(a.w[1], o, up_words, stage, xs, a.n_in);
      if (threadIdx.x % 32 == 0) a.w[1].y[o] = up;
      y = GluValue(a.glu, y, up);
    }
    if (threadIdx.x % 32 == 0) {
      w.y[o] = y;
      if (a.acc != nullptr) a.acc[o] += y;
    }
  }
}

// Whether MatVecKernel takes the op: one row, x fits its shared memory, and every weight row
// starts at a multiple of 4 bytes (its 4-byte loads).
bool MatVecFits(const MatMulArgs& a, int n_weights) {
  if (a.form.max_rows != 1 || a.n_in > kMatVecMaxInputs) return false;
  for (int i = 0; i < n_weights; ++i) {
    if (a.w[i].row_bytes % 4 != 0 || reinterpret_cast<uintptr_t>(a.w[i].data) % 4 != 0) {
      return false;
    }
  }
  return true;
}

template <int kType>
cudaError_t LaunchMatMul(const MatMulArgs& a, unsigned columns, unsigned z, bool matvec,
                         const StepValues* step, bool pdl, cudaStream_t stream) {
  const dim3 threads(32 * kWarpsPerBlock);
  if (matvec) {
    const size_t shared =
        kWarpsPerBlock * kChunkBytes + sizeof(float) * static_cast<size_t>(a.n_in);
    const dim3 grid(columns, 1, z);
    if (a.rows_per_warp == kWideRowsPerWarp) {
      return Launch(pdl, MatVecKernel<kType, kWideRowsPerWarp>, grid, threads, shared, stream, a,
                    step);
    }
    return Launch(pdl, MatVecKernel<kType, 1>, grid, threads, shared, stream, a, step);
  }
  if (a.form.max_rows == 1) {
    return Launch(pdl, MatMulKernel<1, kType>, dim3(columns, 1, z), threads, 0, stream, a, step);
  }
  return Launch(pdl, MatMulKernel<8, kType>, dim3(columns, Blocks(a.form.max_rows, 8), z), threads,
                0, stream, a, step);
}

// The kernel for weights of type t (kAnyType when the op's weights differ in type).
cudaError_t LaunchForType(int t, const MatMulArgs& a, unsigned columns, unsigned z, bool matvec,
                          const StepValues* step, bool pdl, cudaStream_t stream) {
  switch (t) {
#define STATICLM_MATMUL_TYPE(type) \
  case static_cast<int>(type):     \
    return LaunchMatMul<static_cast<int>(type)>(a, columns, z, matvec, step, pdl, stream);
    STATICLM_MATMUL_TYPE(DType::kF32)
    STATICLM_MATMUL_TYPE(DType::kF16)
    STATICLM_MATMUL_TYPE(DType::kBF16)
    STATICLM_MATMUL_TYPE(DType::kQ4_0)
    STATICLM_MATMUL_TYPE(DType::kQ4_1)
    STATICLM_MATMUL_TYPE(DType::kQ5_0)
    STATICLM_MATMUL_TYPE(DType::kQ5_1)
    STATICLM_MATMUL_TYPE(DType::kQ8_0)
    STATICLM_MATMUL_TYPE(DType::kQ4_K)
    STATICLM_MATMUL_TYPE(DType::kQ5_K)
    STATICLM_MATMUL_TYPE(DType::kQ6_K)
#undef STATICLM_MATMUL_TYPE
    default:
      return LaunchMatMul<kAnyType>(a, columns, z, matvec, step, pdl, stream);
  }
}

// Weight tensor `weight` of a plan, with the tensor its product writes.
Weight WeightOf(const Plan& plan, const DeviceBuffers& buffers, uint32_t weight, uint32_t output) {
  const TensorRegion& w = plan.tensors[weight];
  return {w.dtype, TensorAt<const uint8_t>(plan, buffers, weight),
          DTypeBytes(w.dtype, static_cast<uint64_t>(w.shape[1])), static_cast<int32_t>(w.shape[0]),
          TensorAt<float>(plan, buffers, output)};
}

}  // namespace

cudaError_t EnqueueMatMul(const Plan& plan, const Op& op, const DeviceBuffers& buffers,
                          const StepValues* step, cudaStream_t stream) {
  if (JoinsPreviousLaunch(plan, op)) return cudaSuccess;  // a GeGLU's up: the gate's launch
  const OpParams& p = op.params;
  const MatMulLayout layout = GetMatMulLayout(p);
  MatMulArgs a{};
  a.form = RowFormOf(plan, op);
  a.x = TensorAt<const float>(plan, buffers, op.inputs[0]);
  a.glu = p.silu_mul ? Glu::kSilu : Glu::kNone;
  a.acc = layout.acc_output >= 0 ? TensorAt<float>(plan, buffers, op.outputs[layout.acc_output])
                                 : nullptr;
  int32_t widest = 0;
  for (int i = 0; i < layout.n_weights; ++i) {
    a.n_in = static_cast<int32_t>(plan.tensors[op.inputs[1 + i]].shape[1]);
    a.w[i] = WeightOf(plan, buffers, op.inputs[1 + i], op.outputs[i]);
    widest = a.w[i].n_out > widest ? a.w[i].n_out : widest;
  }
  int n_weights = layout.n_weights;
  if (const Op* up = GegluUpOf(plan, op)) {  // gate, up and gelu_mul: this one launch
    a.w[1] = WeightOf(plan, buffers, up->inputs[1], up->outputs[0]);
    a.glu = Glu::kGelu;
    n_weights = 2;
  }
  if (p.norm_input) {
    a.norm_weight = TensorAt<const float>(plan, buffers, op.inputs[layout.norm_weight_input]);
    a.normed = TensorAt<float>(plan, buffers, op.outputs[layout.normed_output]);
    a.eps = p.eps;
  }
  const bool gated = a.glu != Glu::kNone;
  const unsigned z = gated ? 1u : static_cast<unsigned>(n_weights);
  bool same_type = true;
  for (int i = 1; i < n_weights; ++i) same_type = same_type && a.w[i].type == a.w[0].type;
  const bool matvec = MatVecFits(a, n_weights);
  a.rows_per_warp = matvec && !gated && widest >= kWideProductRows ? kWideRowsPerWarp : 1;
  const int32_t rows_per_block = kWarpsPerBlock * a.rows_per_warp;
  const unsigned columns = Blocks(widest, rows_per_block);
  const bool pdl = buffers.programmatic_launch;
  if (same_type || gated) {
    return LaunchForType(same_type ? static_cast<int>(a.w[0].type) : kAnyType, a, columns, z,
                         matvec, step, pdl, stream);
  }
  // Weights of differing types (Q4_K with Q6_K): a launch each, each its own kernel.
  cudaError_t e = cudaSuccess;
  for (int i = 0; i < n_weights && e == cudaSuccess; ++i) {
    a.first_weight = i;
    e = LaunchForType(static_cast<int>(a.w[i].type), a, Blocks(a.w[i].n_out, rows_per_block), 1,
                      matvec, step, pdl, stream);
  }
  return e;
}

// MatVecKernel's shared memory may pass the 48 KiB a launch gets without asking.
template <int kType>
cudaError_t AllowMatVecShared() {
  const int bytes = static_cast<int>(kMatVecMaxSharedBytes);
  const auto attribute = cudaFuncAttributeMaxDynamicSharedMemorySize;
  cudaError_t e = cudaFuncSetAttribute(MatVecKernel<kType, 1>, attribute, bytes);
  if (e == cudaSuccess) {
    e = cudaFuncSetAttribute(MatVecKernel<kType, kWideRowsPerWarp>, attribute, bytes);
  }
  return e;
}

cudaError_t PreloadMatMulKernels() {
  const cudaError_t allowed[] = {AllowMatVecShared<static_cast<int>(DType::kF32)>(),
                                 AllowMatVecShared<static_cast<int>(DType::kF16)>(),
                                 AllowMatVecShared<static_cast<int>(DType::kBF16)>(),
                                 AllowMatVecShared<static_cast<int>(DType::kQ4_0)>(),
                                 AllowMatVecShared<static_cast<int>(DType::kQ4_1)>(),
                                 AllowMatVecShared<static_cast<int>(DType::kQ5_0)>(),
                                 AllowMatVecShared<static_cast<int>(DType::kQ5_1)>(),
                                 AllowMatVecShared<static_cast<int>(DType::kQ8_0)>(),
                                 AllowMatVecShared<static_cast<int>(DType::kQ4_K)>(),
                                 AllowMatVecShared<static_cast<int>(DType::kQ5_K)>(),
                                 AllowMatVecShared<static_cast<int>(DType::kQ6_K)>(),
                                 AllowMatVecShared<kAnyType>()};
  for (cudaError_t e : allowed) {
    if (e != cudaSuccess) return e;
  }
#define STATICLM_MATMUL_KERNELS(type)                                               \
  MatMulKernel<1, static_cast<int>(type)>, MatMulKernel<8, static_cast<int>(type)>, \
      MatVecKernel<static_cast<int>(type), 1>,                                      \
      MatVecKernel<static_cast<int>(type), kWideRowsPerWarp>
  return PreloadAll(STATICLM_MATMUL_KERNELS(DType::kF32), STATICLM_MATMUL_KERNELS(DType::kF16),
                    STATICLM_MATMUL_KERNELS(DType::kBF16), STATICLM_MATMUL_KERNELS(DType::kQ4_0),
                    STATICLM_MATMUL_KERNELS(DType::kQ4_1), STATICLM_MATMUL_KERNELS(DType::kQ5_0),
                    STATICLM_MATMUL_KERNELS(DType::kQ5_1), STATICLM_MATMUL_KERNELS(DType::kQ8_0),
                    STATICLM_MATMUL_KERNELS(DType::kQ4_K), STATICLM_MATMUL_KERNELS(DType::kQ5_K),
                    STATICLM_MATMUL_KERNELS(DType::kQ6_K), STATICLM_MATMUL_KERNELS(kAnyType));
#undef STATICLM_MATMUL_KERNELS
}

}  // namespace staticlm::cuda
