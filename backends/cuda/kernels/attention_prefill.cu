// kAttention of a prefill chunk (the rows of one sequence), tiled: a block of 4 warps per
// (query head, tile of 4 consecutive rows), a warp per row. The tile's rows attend to
// overlapping positions, so the block walks the union of their attended positions (the sinks
// of the last row, then the recent span from the first row's start to the last row's position)
// 16 at a time: all its threads load those keys and values once into shared memory (decoded
// from any cache type), then each warp folds the ones its own row attends to into its online
// softmax (MergeSoftmax), in the reference's order (sinks, then the recent span ascending).
#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/kernel_math.h"
#include "backends/cuda/kernels/kv_access.h"

namespace staticlm::cuda {
namespace {

constexpr int kTileRows = 4;
constexpr int kTilePositions = 16;
constexpr int kMaxDimsPerLane = 8;  // head_dim ≤ 256

struct PrefillArgs {
  const float* q;
  float* out;
  SequencedKv cache;
  RowForm form;
};

// The union of the tile's attended positions: the sinks [0, sink_end), then [begin, last].
struct TileSpan {
  int64_t sink_end, begin, last;

  __device__ int64_t Count() const { return sink_end + (last >= begin ? last - begin + 1 : 0); }
  __device__ int64_t At(int64_t u) const { return u < sink_end ? u : begin + (u - sink_end); }
};

// The warp's query row in shared memory, and rotated to its cache position for the sinks,
// both in the Hadamard basis for q8 (as attention.cu's LoadQuery, by one warp).
__device__ void LoadRowQuery(const float* qh, const OpParams& p, const float* rope_factors,
                             const AttendedSpans& span, int64_t position, float* q, float* q_sink) {
  const int lane = threadIdx.x % 32;
  const int32_t hd = p.head_dim;
  for (int32_t d = lane; d < hd; d += 32) q[d] = qh[d];
  for (int32_t i = lane; span.sink_end > 0 && i < hd / 2; i += 32) {
    RotateQueryPair(qh, i, p, span.cache_position - position, rope_factors, q_sink);
  }
  __syncwarp();
  if (p.kv_quant == KvQuant::kQ8) {
    Hadamard<true>(q, hd);
    if (span.sink_end > 0) Hadamard<true>(q_sink, hd);
  }
}

__global__ void PrefillAttentionKernel(PrefillArgs a, const StepValues* step) {
  __shared__ float q[kTileRows][256], q_sink[kTileRows][256];
  __shared__ float keys[kTilePositions][256], values[kTilePositions][256];
  StartAfterPreviousKernels();
  const int32_t h = blockIdx.x, first_row = blockIdx.y * kTileRows;
  const int32_t rows = StepRows(step, a.form);
  if (first_row >= rows) return;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int32_t r = first_row + warp;
  const bool active = r < rows;
  const KvView c = a.cache.Of(step->sequence);
  const OpParams& p = c.params;
  const int32_t hd = p.head_dim, g = h / (p.n_heads / p.n_kv_heads);
  const int64_t step_end = int64_t{step->position} + step->n_tokens;
  const int64_t position = int64_t{step->position} + r;
  const int64_t last = int64_t{step->position} + min(first_row + kTileRows, rows) - 1;
  const AttendedSpans span = Attended(p, position);
  const TileSpan tile{Attended(p, last).sink_end, Attended(p, step->position + first_row).begin,
                      last};
  if (active) {
    LoadRowQuery(a.q + (static_cast<int64_t>(r) * p.n_heads + h) * hd, p,
                 a.cache.first.rope_factors, span, position, q[warp], q_sink[warp]);
  }
  SoftmaxPartial s{-INFINITY, 0.0f};
  float acc[kMaxDimsPerLane] = {};
  const int64_t count = tile.Count();
  for (int64_t u0 = 0; u0 < count; u0 += kTilePositions) {
    const int n_here = static_cast<int>(min(int64_t{kTilePositions}, count - u0));
    __syncthreads();  // the previous positions are consumed
    for (int idx = threadIdx.x; idx < n_here * hd; idx += blockDim.x) {
      const int i = idx / hd, d = idx % hd;
      keys[i][d] = KvLoadKey(c, step_end, tile.At(u0 + i), g, d);
      values[i][d] = KvLoadValue(c, step_end, tile.At(u0 + i), g, d);
    }
    __syncthreads();
    for (int i = 0; active && i < n_here; ++i) {
      const int64_t t = tile.At(u0 + i);
      const bool sink = t < span.sink_end, recent = t >= span.begin && t <= position;
      if (!sink && !recent) continue;
      const float* qn = sink ? q_sink[warp] : q[warp];
      float dot = 0.0f;
      for (int32_t d = lane; d < hd; d += 32) dot += qn[d] * keys[i][d];
      float fa = 0.0f, fb = 0.0f;
      MergeSoftmax(&s, {WarpSum(dot) * p.scale, 1.0f}, &fa, &fb);
      for (int j = 0; j < kMaxDimsPerLane; ++j) {
        const int32_t d = lane + 32 * j;
        if (d < hd) acc[j] = acc[j] * fa + values[i][d] * fb;
      }
    }
  }
  if (!active) return;
  float* buffer = q[warp];  // the row's query is no longer needed
  for (int j = 0; j < kMaxDimsPerLane; ++j) {
    if (lane + 32 * j < hd) buffer[lane + 32 * j] = acc[j] / s.sum;
  }
  __syncwarp();
  if (p.kv_quant == KvQuant::kQ8) Hadamard<true>(buffer, hd);
  float* o = a.out + (static_cast<int64_t>(r) * p.n_heads + h) * hd;
  for (int32_t d = lane; d < hd; d += 32) o[d] = buffer[d];
}

}  // namespace

cudaError_t LaunchPrefillAttention(const float* q, float* out, const SequencedKv& cache,
                                   RowForm form, const StepValues* step, bool programmatic,
                                   cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(cache.first.params.n_heads),
                  Blocks(form.max_rows, kTileRows));
  return Launch(programmatic, PrefillAttentionKernel, grid, dim3(32 * kTileRows), 0, stream,
                PrefillArgs{q, out, cache, form}, step);
}

cudaError_t PreloadPrefillAttentionKernels() {
  return PreloadAll(PrefillAttentionKernel);
}

}  // namespace staticlm::cuda
