#include "backends/cuda/cuda_sizing.h"

#include <algorithm>
#include <cstdio>

namespace staticlm::cuda {
namespace {

// The token ids and the logits start on their own 256-byte boundary, as cudaMalloc's do, so
// that the copies to and from them run at full speed.
constexpr uint64_t kPinnedAlign = 256;

uint64_t AlignUp(uint64_t n, uint64_t a) {
  return (n + a - 1) / a * a;
}

double MiB(uint64_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

}  // namespace

CudaSizing SizeForPlans(const Plan* const* plans, int n_plans) {
  CudaSizing s;
  for (int i = 0; i < n_plans; ++i) {
    const Plan& p = *plans[i];
    for (int b = 0; b < kBufferCount; ++b) {
      s.device_buffer[b] = std::max(s.device_buffer[b], p.buffer_bytes[b]);
    }
    s.max_token_bytes = std::max(s.max_token_bytes, p.tensors[p.tokens_tensor].bytes());
    s.max_logits_bytes = std::max(s.max_logits_bytes, p.tensors[p.logits_tensor].bytes());
    for (const Op& op : p.ops) {
      s.device_attention_partials =
          std::max(s.device_attention_partials, AttentionPartialBytes(p, op));
      s.device_attention_arrivals =
          std::max(s.device_attention_arrivals, AttentionArrivalBytes(p, op));
    }
  }
  s.device_buffer[static_cast<int>(BufferId::kWeights)] += kWeightsSpare;
  s.device_step_block = sizeof(DeviceStepBlock);
  s.device_total = s.device_step_block + s.device_attention_partials + s.device_attention_arrivals;
  for (uint64_t bytes : s.device_buffer) s.device_total += bytes;
  s.pinned_tokens_offset = AlignUp(sizeof(PinnedStepBlock), kPinnedAlign);
  s.pinned_logits_offset = AlignUp(s.pinned_tokens_offset + s.max_token_bytes, kPinnedAlign);
  s.pinned_total = s.pinned_logits_offset + s.max_logits_bytes;
  return s;
}

void DescribeSizing(const CudaSizing& s, char* out, size_t capacity) {
  auto mib = [&](BufferId id) { return MiB(s.device_buffer[static_cast<int>(id)]); };
  std::snprintf(out, capacity,
                "device %.1f MiB (weights %.1f, KV cache %.1f, arena %.1f, attention splits "
                "%.2f, io %.2f MiB) + %.1f KiB pinned",
                MiB(s.device_total), mib(BufferId::kWeights), mib(BufferId::kKvCache),
                mib(BufferId::kArena),
                MiB(s.device_attention_partials + s.device_attention_arrivals), mib(BufferId::kIo),
                static_cast<double>(s.pinned_total) / 1024.0);
}

}  // namespace staticlm::cuda
