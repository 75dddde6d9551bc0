// EnqueueSample: one block of 1024 threads chooses a token from one logits row with the
// semantics of DeviceLogits::SampleOnDevice (sample_math.h). It first checks the row (NaN or
// +inf: status 1; every logit −inf: status 2), then greedy takes the best candidate; top-k runs
// k rounds, each taking the best candidate strictly after the previous one in SampleBefore's
// strict order (no memory beyond the k chosen), and thread 0 applies top-p and min-p and draws
// among them (SampleDraw).
#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/sample_math.h"

namespace staticlm::cuda {
namespace {

constexpr int kThreads = 1024;

struct Candidate {
  float score;
  int32_t id;  // −1: none
};

__device__ bool Better(Candidate a, Candidate b) {
  return a.id >= 0 && (b.id < 0 || SampleBefore(a.score, a.id, b.score, b.id));
}

// The best candidate over the block; every thread gets it.
__device__ Candidate BlockBest(Candidate c) {
  __shared__ Candidate partial[32];
  for (int o = 16; o > 0; o /= 2) {
    Candidate other{__shfl_xor_sync(0xffffffffu, c.score, o),
                    __shfl_xor_sync(0xffffffffu, c.id, o)};
    if (Better(other, c)) c = other;
  }
  __syncthreads();
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = c;
  __syncthreads();
  c = partial[threadIdx.x % 32];
  for (int o = 16; o > 0; o /= 2) {
    Candidate other{__shfl_xor_sync(0xffffffffu, c.score, o),
                    __shfl_xor_sync(0xffffffffu, c.id, o)};
    if (Better(other, c)) c = other;
  }
  return c;
}

// The best candidate strictly after `after` in the order (after.id −1: the best of all).
__device__ Candidate NextBest(const float* row, int32_t vocab, Candidate after) {
  Candidate best{0.0f, -1};
  for (int32_t i = threadIdx.x; i < vocab; i += blockDim.x) {
    const Candidate c{row[i], i};
    if (after.id >= 0 && !SampleBefore(after.score, after.id, c.score, c.id)) continue;
    if (Better(c, best)) best = c;
  }
  return BlockBest(best);
}

// 0: ok; 1: a NaN or +inf logit; 2: every logit −inf (as Sampler::LoadScores).
__device__ int32_t RowStatus(const float* row, int32_t vocab) {
  int bad = 0, finite = 0;
  for (int32_t i = threadIdx.x; i < vocab; i += blockDim.x) {
    bad |= isnan(row[i]) || row[i] == INFINITY;
    finite |= row[i] != -INFINITY;
  }
  bad = __syncthreads_or(bad);
  finite = __syncthreads_or(finite);
  return bad ? 1 : (finite ? 0 : 2);
}

__global__ void SampleKernel(const float* logits, int32_t vocab, const SampleValues* values,
                             SampleResult* result) {
  __shared__ float scores[kMaxSampleTopK];
  __shared__ int32_t ids[kMaxSampleTopK];
  const float* row = logits + static_cast<int64_t>(values->row) * vocab;
  const int32_t status = RowStatus(row, vocab);
  if (status != 0) {
    if (threadIdx.x == 0) *result = {0, status};
    return;
  }
  const int32_t k = values->top_k;
  if (k == 0) {
    const Candidate best = NextBest(row, vocab, {0.0f, -1});
    if (threadIdx.x == 0) *result = {best.id, 0};
    return;
  }
  // top_k ≥ vocab keeps every token in id order, as the host sampler does.
  const int32_t n = k < vocab ? k : vocab;
  Candidate previous{0.0f, -1};
  for (int32_t i = 0; i < n; ++i) {
    previous = k < vocab ? NextBest(row, vocab, previous) : Candidate{row[i], i};
    if (threadIdx.x == 0) {
      scores[i] = previous.score;
      ids[i] = previous.id;
    }
  }
  if (threadIdx.x == 0) {
    *result = {SampleDraw(scores, ids, n, values->temperature, values->top_p, values->min_p,
                          values->uniform),
               0};
  }
}

}  // namespace

cudaError_t EnqueueSample(const float* logits, int32_t vocab, const SampleValues* values,
                          SampleResult* result, cudaStream_t stream) {
  SampleKernel<<<1, kThreads, 0, stream>>>(logits, vocab, values, result);
  return cudaPeekAtLastError();
}

}  // namespace staticlm::cuda
