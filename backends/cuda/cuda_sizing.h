// How much device and pinned host memory the CUDA backend needs for a set of plans, computed
// from the plans alone before anything is allocated, so that Prepare can refuse a device with
// too little free memory in one line that says how much is needed.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/cuda/cuda_ops.h"
#include "contract/plan.h"

namespace staticlm::cuda {

// The device's small block: what the host writes before each launch or sample and reads back.
struct DeviceStepBlock {
  StepValues step;
  SampleValues sample;
  SampleResult result;
  SampleScratch sample_scratch;  // written and read on the device alone
};

// The pinned host block's fixed part; the token ids and the logits follow at the offsets in
// CudaSizing.
struct PinnedStepBlock {
  StepValues step;
  SampleValues sample;
  SampleResult result;
};

struct CudaSizing {
  // The plan buffers on the device: the largest buffer_bytes of any plan, per BufferId; the
  // weights get kWeightsSpare more (quantized loaders may read one word past a row's end).
  uint64_t device_buffer[kBufferCount] = {0, 0, 0, 0};
  uint64_t device_step_block = 0;  // sizeof(DeviceStepBlock)
  // DeviceBuffers::attention_partials: the largest AttentionPartialBytes of any op.
  uint64_t device_attention_partials = 0;
  // DeviceBuffers::attention_arrivals: the largest AttentionArrivalBytes of any op.
  uint64_t device_attention_arrivals = 0;
  uint64_t device_total = 0;  // the above, summed
  // One pinned block: PinnedStepBlock, then the token ids, then the logits.
  uint64_t pinned_tokens_offset = 0;
  uint64_t pinned_logits_offset = 0;
  uint64_t pinned_total = 0;
  uint64_t max_token_bytes = 0;   // the largest tokens tensor of any plan
  uint64_t max_logits_bytes = 0;  // the largest logits tensor of any plan
};

constexpr uint64_t kWeightsSpare = 16;

// Init only. The memory `n_plans` plans need; the plans share their buffers.
CudaSizing SizeForPlans(const Plan* const* plans, int n_plans);

// "device 123.4 MiB (weights …, KV cache …, arena …, io …) + 1.2 KiB pinned" into `out`.
void DescribeSizing(const CudaSizing& sizing, char* out, size_t capacity);

}  // namespace staticlm::cuda
