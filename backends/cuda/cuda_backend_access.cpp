// CudaBackend's host access to its buffers (BufferAccess) and to the logits it left on the
// device (DeviceLogits): bounds-checked copies through the stream, no allocation.
#include <cmath>
#include <cstring>

#include "backends/cuda/cuda_backend.h"

namespace staticlm::cuda {
namespace {

constexpr int kIo = static_cast<int>(BufferId::kIo);

// Host range of the host's own io buffer, or nullptr when out of bounds.
uint8_t* HostRange(const BufferBinding& host, uint64_t offset, uint64_t bytes) {
  const uint64_t size = host.bytes[kIo];
  if (host.data[kIo] == nullptr || offset > size || bytes > size - offset) return nullptr;
  return host.data[kIo] + offset;
}

}  // namespace

uint8_t* CudaBackend::DeviceRange(BufferId id, uint64_t offset, uint64_t bytes) const {
  if (id == BufferId::kWeights || plans_.empty()) return nullptr;
  const uint64_t size = host_.bytes[static_cast<int>(id)];
  if (offset > size || bytes > size - offset) return nullptr;
  return buffers_.base[static_cast<int>(id)] + offset;
}

Status CudaBackend::ReadBuffer(BufferId id, uint64_t offset, uint64_t bytes, void* dst) {
  if (id == BufferId::kIo) {  // the io buffer is the host's
    const uint8_t* src = HostRange(host_, offset, bytes);
    if (src == nullptr) return Status::Error(StatusCode::kInvalidArgument, "read out of bounds");
    if (bytes != 0) std::memcpy(dst, src, bytes);
    return Status::Ok();
  }
  STATICLM_RETURN_IF_ERROR(Usable());
  const uint8_t* src = DeviceRange(id, offset, bytes);
  if (src == nullptr) return Status::Error(StatusCode::kInvalidArgument, "read out of bounds");
  if (bytes == 0) return Status::Ok();
  cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_);
  if (e != cudaSuccess) device_failure_ = cudaGetErrorString(e);
  return Synchronize();
}

Status CudaBackend::WriteBuffer(BufferId id, uint64_t offset, uint64_t bytes, const void* src) {
  if (id == BufferId::kIo) {
    uint8_t* dst = HostRange(host_, offset, bytes);
    if (dst == nullptr) return Status::Error(StatusCode::kInvalidArgument, "write out of bounds");
    if (bytes != 0) std::memcpy(dst, src, bytes);
    return Status::Ok();
  }
  STATICLM_RETURN_IF_ERROR(Usable());
  uint8_t* dst = DeviceRange(id, offset, bytes);
  if (dst == nullptr) return Status::Error(StatusCode::kInvalidArgument, "write out of bounds");
  if (bytes == 0) return Status::Ok();
  cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_);
  if (e != cudaSuccess) device_failure_ = cudaGetErrorString(e);
  return Synchronize();
}

Status CudaBackend::CopyWithinBuffer(BufferId id, uint64_t src_offset, uint64_t dst_offset,
                                     uint64_t bytes) {
  if (id == BufferId::kIo) {
    uint8_t* src = HostRange(host_, src_offset, bytes);
    uint8_t* dst = HostRange(host_, dst_offset, bytes);
    if (src == nullptr || dst == nullptr) {
      return Status::Error(StatusCode::kInvalidArgument, "copy out of bounds");
    }
    if (bytes != 0) std::memmove(dst, src, bytes);
    return Status::Ok();
  }
  STATICLM_RETURN_IF_ERROR(Usable());
  uint8_t* src = DeviceRange(id, src_offset, bytes);
  uint8_t* dst = DeviceRange(id, dst_offset, bytes);
  if (src == nullptr || dst == nullptr) {
    return Status::Error(StatusCode::kInvalidArgument, "copy out of bounds");
  }
  if (bytes == 0) return Status::Ok();
  cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_);
  if (e != cudaSuccess) device_failure_ = cudaGetErrorString(e);
  return Synchronize();
}

Status CudaBackend::FetchLogits(int plan_index, int32_t first_row, int32_t n_rows) {
  STATICLM_RETURN_IF_ERROR(Usable());
  const Plan* plan = PlanAt(plan_index);
  if (plan == nullptr) return Status::Error(StatusCode::kInvalidState, "no such plan prepared");
  const TensorRegion& logits = plan->tensors[plan->logits_tensor];
  if (first_row < 0 || n_rows < 0 || first_row > logits.shape[0] - n_rows) {
    return Status::Error(StatusCode::kInvalidArgument, "logits rows out of range");
  }
  const uint64_t row_bytes = logits.bytes() / static_cast<uint64_t>(logits.shape[0]);
  const uint64_t at = logits.offset + static_cast<uint64_t>(first_row) * row_bytes;
  const uint64_t bytes = static_cast<uint64_t>(n_rows) * row_bytes;
  if (bytes == 0) return Status::Ok();
  uint8_t* staging = pinned_ + sizing_.pinned_logits_offset;
  cudaError_t e =
      cudaMemcpyAsync(staging, buffers_.base[kIo] + at, bytes, cudaMemcpyDeviceToHost, stream_);
  if (e != cudaSuccess) device_failure_ = cudaGetErrorString(e);
  STATICLM_RETURN_IF_ERROR(Synchronize());
  std::memcpy(host_.data[kIo] + at, staging, bytes);
  return Status::Ok();
}

Status CudaBackend::SampleOnDevice(int plan_index, int32_t row, const DeviceSampling& sampling,
                                   int32_t* token) {
  STATICLM_RETURN_IF_ERROR(Usable());
  const Plan* plan = PlanAt(plan_index);
  if (plan == nullptr) {
    return Status::Error(StatusCode::kInvalidArgument, "device sampling: no such plan");
  }
  const TensorRegion& logits = plan->tensors[plan->logits_tensor];
  const auto vocab = static_cast<int32_t>(logits.shape[1]);
  if (row < 0 || row >= logits.shape[0]) {
    return Status::Error(StatusCode::kInvalidArgument, "device sampling: no such logits row");
  }
  STATICLM_RETURN_IF_ERROR(CheckDeviceSampling(sampling, vocab, kMaxSampleTopK));
  auto* pinned = reinterpret_cast<PinnedStepBlock*>(pinned_);
  pinned->sample = SampleValues{
      row, sampling.top_k, sampling.temperature, sampling.top_p, sampling.uniform, sampling.min_p,
      0.0f};
  const auto* device_logits = reinterpret_cast<const float*>(buffers_.base[kIo] + logits.offset);
  cudaError_t e = cudaMemcpyAsync(&device_step_->sample, &pinned->sample, sizeof(SampleValues),
                                  cudaMemcpyHostToDevice, stream_);
  if (e == cudaSuccess) {
    e = EnqueueSample(device_logits, vocab, &device_step_->sample, &device_step_->sample_scratch,
                      &device_step_->result, stream_);
    // A launch refused (no kernel, bad configuration) leaves the device usable; a sticky
    // error from earlier work does not, and the synchronisation below finds it.
    if (e == cudaErrorNotSupported || e == cudaErrorInvalidConfiguration) {
      (void)cudaGetLastError();
      (void)Synchronize();
      return Status::Error(StatusCode::kUnsupported, "CUDA: device sampling failed to launch (%s)",
                           cudaGetErrorString(e));
    }
  }
  if (e == cudaSuccess) {
    e = cudaMemcpyAsync(&pinned->result, &device_step_->result, sizeof(SampleResult),
                        cudaMemcpyDeviceToHost, stream_);
  }
  if (e != cudaSuccess) device_failure_ = cudaGetErrorString(e);
  STATICLM_RETURN_IF_ERROR(Usable());
  STATICLM_RETURN_IF_ERROR(Synchronize());
  if (pinned->result.status == 1) {
    return Status::Error(StatusCode::kInvalidArgument, "sampler: logits contain NaN or +inf");
  }
  if (pinned->result.status == 2) {
    return Status::Error(StatusCode::kInvalidArgument, "sampler: every logit is -inf");
  }
  *token = pinned->result.token;
  return Status::Ok();
}

}  // namespace staticlm::cuda
