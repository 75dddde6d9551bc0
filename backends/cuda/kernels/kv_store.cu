// kKvStore for every cache policy and type. StoreKernel: a block per (row, KV head) writes the
// row at the slot its policy gives (contract/kv_policy.h): f16/f32 as they are, q8
// Hadamard-rotated and quantized (bit for bit the reference's), q4 into the full-precision
// rings. Q4GroupKernel then quantizes every group of kv_group positions the step completed:
// keys per channel (a thread per channel pair, whose two nibbles share a byte), values per
// token (a warp per token).
#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/kernel_math.h"
#include "backends/cuda/kernels/kv_access.h"

namespace staticlm::cuda {
namespace {

struct StoreArgs {
  const float* k;
  const float* v;
  SequencedKv cache;
  RowForm form;
};

// q8: row src (head_dim values) rotated, then symmetric int8 with scale max|x| / 127.
__device__ void StoreQ8Row(const float* src, int32_t hd, int8_t* q, float* scale) {
  __shared__ float x[256];
  __syncthreads();  // the previous row's readers are done
  for (int32_t d = threadIdx.x; d < hd; d += blockDim.x) x[d] = src[d];
  Hadamard<false>(x, hd);
  float amax = 0.0f;
  for (int32_t d = threadIdx.x; d < hd; d += blockDim.x) amax = fmaxf(amax, fabsf(x[d]));
  amax = BlockMax(amax);
  const float s = amax / 127.0f;
  const float inv = s > 0.0f ? 1.0f / s : 0.0f;
  for (int32_t d = threadIdx.x; d < hd; d += blockDim.x) q[d] = KvCode8(x[d], inv);
  if (threadIdx.x == 0) *scale = s;
}

__global__ void StoreKernel(StoreArgs a, const StepValues* step) {
  StartAfterPreviousKernels();
  const int32_t r = blockIdx.x, g = blockIdx.y;
  if (r >= StepRows(step, a.form)) return;
  const int64_t position = RowPosition(step, a.form, r);
  const KvView c = a.cache.Of(RowSequence(step, a.form, r));
  const OpParams& p = c.params;
  const int32_t hd = p.head_dim;
  const float* k = a.k + (static_cast<int64_t>(r) * p.n_kv_heads + g) * hd;
  const float* v = a.v + (static_cast<int64_t>(r) * p.n_kv_heads + g) * hd;
  const int64_t row = g * static_cast<int64_t>(p.cache_slots) + KvSlot(p, position);
  switch (p.kv_quant) {
    case KvQuant::kNone:
      for (int32_t d = threadIdx.x; d < hd; d += blockDim.x) {
        if (c.type == DType::kF16) {
          reinterpret_cast<uint16_t*>(c.k)[row * hd + d] = cpu::FloatToHalf(k[d]);
          reinterpret_cast<uint16_t*>(c.v)[row * hd + d] = cpu::FloatToHalf(v[d]);
        } else {
          reinterpret_cast<float*>(c.k)[row * hd + d] = k[d];
          reinterpret_cast<float*>(c.v)[row * hd + d] = v[d];
        }
      }
      return;
    case KvQuant::kQ8:
      StoreQ8Row(k, hd, reinterpret_cast<int8_t*>(c.k) + row * hd, c.k_side + row);
      StoreQ8Row(v, hd, reinterpret_cast<int8_t*>(c.v) + row * hd, c.v_side + row);
      return;
    case KvQuant::kQ4: {
      const int64_t ring =
          (g * static_cast<int64_t>(p.recent_slots) + position % p.recent_slots) * hd;
      for (int32_t d = threadIdx.x; d < hd; d += blockDim.x) {
        c.k_recent[ring + d] = k[d];
        c.v_recent[ring + d] = v[d];
      }
      return;
    }
  }
}

__device__ const float* Recent(const float* ring, const OpParams& p, int64_t g, int64_t t) {
  return ring + (g * p.recent_slots + t % p.recent_slots) * p.head_dim;
}

// Keys of group [first, first + group) per channel: scale and min over the group's tokens.
__device__ void QuantizeKeys(const KvView& c, int64_t g, int64_t first, int64_t slot0) {
  const OpParams& p = c.params;
  const int64_t hd = p.head_dim, group = p.kv_group;
  float* k_params = c.k_side + (g * (p.cache_slots / group) + slot0 / group) * 2 * hd;
  for (int64_t pair = threadIdx.x; pair < hd / 2; pair += blockDim.x) {
    float scale[2], lo[2];
    for (int e = 0; e < 2; ++e) {
      const int64_t d = 2 * pair + e;
      float low = Recent(c.k_recent, p, g, first)[d], high = low;
      for (int64_t t = first; t < first + group; ++t) {
        const float x = Recent(c.k_recent, p, g, t)[d];
        low = x < low ? x : low;
        high = x > high ? x : high;
      }
      scale[e] = (high - low) / 15.0f;
      lo[e] = low;
      k_params[d] = scale[e];
      k_params[hd + d] = low;
    }
    for (int64_t t = first; t < first + group; ++t) {
      const float* x = Recent(c.k_recent, p, g, t);
      const int64_t index = (g * p.cache_slots + slot0 + (t - first)) * hd + 2 * pair;
      c.k[index / 2] = static_cast<uint8_t>(KvCode4(x[2 * pair], scale[0], lo[0]) |
                                            (KvCode4(x[2 * pair + 1], scale[1], lo[1]) << 4));
    }
  }
}

// Values of group [first, first + group) per token: scale and min over the head.
__device__ void QuantizeValues(const KvView& c, int64_t g, int64_t first, int64_t slot0) {
  const OpParams& p = c.params;
  const int64_t hd = p.head_dim;
  const int lane = threadIdx.x % 32;
  for (int64_t t = first + threadIdx.x / 32; t < first + p.kv_group; t += blockDim.x / 32) {
    const float* x = Recent(c.v_recent, p, g, t);
    float low = x[0], high = x[0];
    for (int64_t d = lane; d < hd; d += 32) {
      low = fminf(low, x[d]);
      high = fmaxf(high, x[d]);
    }
    low = -WarpMax(-low);
    high = WarpMax(high);
    const int64_t row = g * p.cache_slots + slot0 + (t - first);
    const float scale = (high - low) / 15.0f;
    if (lane == 0) {
      c.v_side[row * 2] = scale;
      c.v_side[row * 2 + 1] = low;
    }
    for (int64_t pair = lane; pair < hd / 2; pair += 32) {
      c.v[(row * hd) / 2 + pair] = static_cast<uint8_t>(
          KvCode4(x[2 * pair], scale, low) | (KvCode4(x[2 * pair + 1], scale, low) << 4));
    }
  }
}

// Block per (completed group, KV head, sequence row when batched).
__global__ void Q4GroupKernel(SequencedKv cache, RowForm form, const StepValues* step) {
  StartAfterPreviousKernels();
  int32_t first_position = step->position, step_end = step->position + step->n_tokens;
  int32_t sequence = step->sequence;
  if (form.batched) {
    const int32_t r = blockIdx.z;
    if (r >= step->n_tokens) return;
    first_position = step->row_positions[r];
    step_end = first_position + 1;
    sequence = step->row_sequences[r];
  }
  const KvView c = cache.Of(sequence);
  const int32_t group = c.params.kv_group;
  const int64_t first = int64_t{first_position} / group * group + int64_t{blockIdx.x} * group;
  if (first + group > step_end) return;
  const int64_t slot0 = KvSlot(c.params, first);
  QuantizeKeys(c, blockIdx.y, first, slot0);
  QuantizeValues(c, blockIdx.y, first, slot0);
}

}  // namespace

SequencedKv CacheOf(const Plan& plan, const Op& op, const DeviceBuffers& buffers,
                    const uint32_t* tensors) {
  SequencedKv c{};
  c.first.params = op.params;
  c.first.type = plan.tensors[tensors[0]].dtype;
  uint8_t* at[6] = {nullptr, nullptr, nullptr, nullptr, nullptr, nullptr};
  const int count = GetKvLayout(op.params.kv_quant).count;
  for (int i = 0; i < count; ++i) {
    at[i] = TensorAt<uint8_t>(plan, buffers, tensors[i]);
    c.stride[i] = plan.tensors[tensors[i]].bytes() / static_cast<uint64_t>(plan.limits.max_batch);
  }
  c.first.k = at[0];
  c.first.v = at[1];
  c.first.k_side = reinterpret_cast<float*>(at[2]);
  c.first.v_side = reinterpret_cast<float*>(at[3]);
  c.first.k_recent = reinterpret_cast<float*>(at[4]);
  c.first.v_recent = reinterpret_cast<float*>(at[5]);
  const int factors = AttentionFactorsInput(op);
  c.first.rope_factors =
      factors >= 0 ? TensorAt<const float>(plan, buffers, op.inputs[factors]) : nullptr;
  return c;
}

cudaError_t EnqueueKvStore(const Plan& plan, const Op& op, const DeviceBuffers& buffers,
                           const StepValues* step, cudaStream_t stream) {
  const OpParams& p = op.params;
  StoreArgs a{TensorAt<const float>(plan, buffers, op.inputs[0]),
              TensorAt<const float>(plan, buffers, op.inputs[1]),
              CacheOf(plan, op, buffers, op.outputs), RowFormOf(plan, op)};
  a.form.max_rows = static_cast<int32_t>(plan.tensors[op.inputs[0]].shape[0]);
  const bool pdl = buffers.programmatic_launch;
  cudaError_t e =
      Launch(pdl, StoreKernel, dim3(a.form.max_rows, p.n_kv_heads), dim3(128), 0, stream, a, step);
  if (e == cudaSuccess && p.kv_quant == KvQuant::kQ4) {
    const int32_t tokens = a.form.batched ? 1 : a.form.max_rows;
    const unsigned groups = static_cast<unsigned>((p.kv_group - 1 + tokens) / p.kv_group);
    const unsigned rows = a.form.batched ? static_cast<unsigned>(a.form.max_rows) : 1u;
    e = Launch(pdl, Q4GroupKernel, dim3(groups, p.n_kv_heads, rows), dim3(128), 0, stream, a.cache,
               a.form, step);
  }
  return e;
}

cudaError_t PreloadKvStoreKernels() {
  return PreloadAll(StoreKernel, Q4GroupKernel);
}

}  // namespace staticlm::cuda
