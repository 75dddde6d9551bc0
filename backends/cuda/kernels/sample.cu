// EnqueueSample: chooses a token from one logits row with the semantics of
// DeviceLogits::SampleOnDevice (sample_math.h), in two launches. First a block per slice of the
// row (kSampleSlices) checks its slice (a NaN or +inf; any logit above -inf) and finds its best
// max(k, 1) candidates: k rounds, each taking the best strictly after the previous one in
// SampleBefore's strict order. Then one block merges: the row's status (NaN or +inf: 1; every
// logit -inf: 2), and the same k rounds over the slices' candidates, which hold the row's k
// best; thread 0 applies top-p and min-p and draws among them (SampleDraw). A row of 262,144
// logits is read by 64 blocks instead of one, and each round of top-k reduces a slice or the
// candidates instead of the whole row.
#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/sample_math.h"

namespace staticlm::cuda {
namespace {

constexpr int kSliceThreads = 256;
constexpr int kChooseThreads = 1024;

struct Candidate {
  float score;
  int32_t id;  // −1: none
};

__device__ bool Better(Candidate a, Candidate b) {
  return a.id >= 0 && (b.id < 0 || SampleBefore(a.score, a.id, b.score, b.id));
}

// The best candidate over the block (a multiple of 32 threads); every thread gets it.
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
  c = threadIdx.x % 32 < blockDim.x / 32 ? partial[threadIdx.x % 32] : Candidate{0.0f, -1};
  for (int o = 16; o > 0; o /= 2) {
    Candidate other{__shfl_xor_sync(0xffffffffu, c.score, o),
                    __shfl_xor_sync(0xffffffffu, c.id, o)};
    if (Better(other, c)) c = other;
  }
  return c;
}

// The best candidate strictly after `after` in the order (after.id −1: the best of all) among
// candidate(j) for j in [0, n); every thread gets it.
template <typename At>
__device__ Candidate NextBest(At candidate, int32_t n, Candidate after) {
  Candidate best{0.0f, -1};
  for (int32_t j = threadIdx.x; j < n; j += blockDim.x) {
    const Candidate c = candidate(j);
    if (after.id >= 0 && !SampleBefore(after.score, after.id, c.score, c.id)) continue;
    if (Better(c, best)) best = c;
  }
  return BlockBest(best);
}

// Candidates each slice keeps: the k best, or the best alone for greedy (k 0). top_k ≥ vocab
// keeps every token in id order and reads the row itself (a vocabulary of at most 64).
__device__ int32_t Rounds(const SampleValues* values, int32_t vocab) {
  const int32_t k = values->top_k;
  return k == 0 ? 1 : (k < vocab ? k : 0);
}

__global__ void SliceKernel(const float* logits, int32_t vocab, const SampleValues* values,
                            SampleScratch* scratch) {
  const float* row = logits + static_cast<int64_t>(values->row) * vocab;
  const int32_t per_slice = (vocab + kSampleSlices - 1) / kSampleSlices;
  const int32_t begin = min(vocab, static_cast<int32_t>(blockIdx.x) * per_slice);
  const int32_t n = min(vocab - begin, per_slice);
  int bad = 0, finite = 0;
  for (int32_t i = begin + threadIdx.x; i < begin + n; i += blockDim.x) {
    bad |= isnan(row[i]) || row[i] == INFINITY;
    finite |= row[i] != -INFINITY;
  }
  bad = __syncthreads_or(bad);
  finite = __syncthreads_or(finite);
  const int32_t slot = blockIdx.x * kMaxSampleTopK;
  if (threadIdx.x == 0) {
    scratch->bad[blockIdx.x] = bad;
    scratch->finite[blockIdx.x] = finite;
  }
  if (bad) return;  // the row is refused
  Candidate previous{0.0f, -1};
  const int32_t rounds = Rounds(values, vocab);
  for (int32_t i = 0; i < rounds; ++i) {
    // Once the slice has no more (a slice shorter than k), the rest are none: id −1.
    if (i == 0 || previous.id >= 0) {
      previous = NextBest(
          [&](int32_t j) {
            return Candidate{row[begin + j], begin + j};
          },
          n, previous);
    }
    if (threadIdx.x == 0) {
      scratch->score[slot + i] = previous.score;
      scratch->id[slot + i] = previous.id;
    }
  }
}

__global__ void ChooseKernel(const float* logits, int32_t vocab, const SampleValues* values,
                             const SampleScratch* scratch, SampleResult* result) {
  __shared__ float scores[kMaxSampleTopK];
  __shared__ int32_t ids[kMaxSampleTopK];
  int bad = 0, finite = 0;
  for (int32_t b = threadIdx.x; b < kSampleSlices; b += blockDim.x) {
    bad |= scratch->bad[b];
    finite |= scratch->finite[b];
  }
  bad = __syncthreads_or(bad);
  finite = __syncthreads_or(finite);
  if (bad || !finite) {
    if (threadIdx.x == 0) *result = {0, bad ? 1 : 2};
    return;
  }
  const int32_t rounds = Rounds(values, vocab);
  auto candidate = [&](int32_t j) {
    const int32_t at = (j / rounds) * kMaxSampleTopK + j % rounds;
    return Candidate{scratch->score[at], scratch->id[at]};
  };
  const int32_t k = values->top_k;
  if (k == 0) {
    const Candidate best = NextBest(candidate, kSampleSlices * rounds, {0.0f, -1});
    if (threadIdx.x == 0) *result = {best.id, 0};
    return;
  }
  const float* row = logits + static_cast<int64_t>(values->row) * vocab;
  const int32_t n = k < vocab ? k : vocab;
  Candidate previous{0.0f, -1};
  for (int32_t i = 0; i < n; ++i) {
    previous =
        rounds > 0 ? NextBest(candidate, kSampleSlices * rounds, previous) : Candidate{row[i], i};
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
                          SampleScratch* scratch, SampleResult* result, cudaStream_t stream) {
  SliceKernel<<<kSampleSlices, kSliceThreads, 0, stream>>>(logits, vocab, values, scratch);
  ChooseKernel<<<1, kChooseThreads, 0, stream>>>(logits, vocab, values, scratch, result);
  return cudaPeekAtLastError();
}

cudaError_t PreloadSampleKernels() {
  return PreloadAll(SliceKernel, ChooseKernel);
}

}  // namespace staticlm::cuda
