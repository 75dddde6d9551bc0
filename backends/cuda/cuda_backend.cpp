#include "backends/cuda/cuda_backend.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backends/cuda/cuda_graph.h"
#include "backends/cuda/cuda_memory.h"
#include "backends/cuda/cuda_step.h"
#include "contract/plan_validation.h"
#include "platform/clock.h"
#include "platform/driver_scope.h"

namespace staticlm::cuda {
namespace {

constexpr int kIo = static_cast<int>(BufferId::kIo);

const char* const kBufferWhat[kBufferCount] = {"the weights", "the KV cache", "the arena",
                                               "the io buffer"};

// Programmatic dependent launch (cuda_ops.h's DeviceBuffers) needs sm 90; STATICLM_CUDA_PDL=0
// turns it off, to measure what it gains or to rule it out.
bool WantsProgrammaticLaunch(const DeviceChoice& device) {
  const char* setting = std::getenv("STATICLM_CUDA_PDL");
  return device.major >= 9 && (setting == nullptr || std::strcmp(setting, "0") != 0);
}

// A plan of one token a step, or of rows that are sequences (batched decode).
bool IsDecodePlan(const Plan& plan) {
  return plan.limits.rows_are_sequences || plan.tensors[plan.tokens_tensor].shape[0] == 1;
}

Status CudaCall(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status::Ok();
  return Status::Error(StatusCode::kInternal, "CUDA: %s failed (%s)", what, cudaGetErrorString(e));
}

}  // namespace

CudaBackend::CudaBackend(const BackendOptions& options) : options_(options) {}

CudaBackend::~CudaBackend() {
  driver_scope::Scope driver;  // teardown: the driver's heap events are its own
  if (stream_ != nullptr) (void)cudaStreamSynchronize(stream_);
  for (cudaGraphExec_t g : graphs_) {
    if (g != nullptr) (void)cudaGraphExecDestroy(g);
  }
  timer_.Destroy();
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
  for (uint8_t* base : buffers_.base) DeviceFree(base);
  DeviceFree(buffers_.attention_partials);
  DeviceFree(buffers_.attention_arrivals);
  DeviceFree(device_step_);
  PinnedFree(pinned_);
}

Status CudaBackend::Prepare(const Plan* const* plans, int n_plans, const BufferBinding& buffers) {
  if (!plans_.empty()) return Status::Error(StatusCode::kInvalidState, "already prepared");
  for (int i = 0; i < n_plans; ++i) STATICLM_RETURN_IF_ERROR(ValidatePlan(*plans[i], buffers));
  host_ = buffers;
  sizing_ = SizeForPlans(plans, n_plans);
  char need[200];
  DescribeSizing(sizing_, need, sizeof(need));
  STATICLM_RETURN_IF_ERROR(ChooseDevice(options_.device, sizing_.device_total, need, &device_));
  for (int i = 0; i < n_plans; ++i) STATICLM_RETURN_IF_ERROR(CheckPlanSupported(*plans[i]));
  for (int i = 0; i < n_plans; ++i) plans_.push_back(plans[i]);
  Status made = CreateResources(n_plans);
  if (!made.ok()) plans_.clear();  // Execute refuses an unprepared backend
  STATICLM_RETURN_IF_ERROR(made);
  std::snprintf(description_, sizeof(description_),
                "cuda: device %d %s (sm %d%d, %.0f MiB free at init), %d graphs%s, %s",
                device_.index, device_.name, device_.major, device_.minor,
                static_cast<double>(device_.free_bytes) / (1024.0 * 1024.0), n_plans,
                buffers_.programmatic_launch ? " (programmatic launch in decode)" : "", need);
  return Status::Ok();
}

// Init: inside a driver_scope::Scope, as the driver may start threads for a stream, pinned
// memory or graphs (platform/driver_scope.h); staticlm's own allocations at init are allowed.
Status CudaBackend::CreateResources(int n_plans) {
  driver_scope::Scope driver;
  for (int b = 0; b < kBufferCount; ++b) {
    void* p = nullptr;
    STATICLM_RETURN_IF_ERROR(DeviceAlloc(sizing_.device_buffer[b], kBufferWhat[b], &p));
    buffers_.base[b] = static_cast<uint8_t*>(p);
  }
  if (sizing_.device_attention_partials > 0) {
    void* p = nullptr;
    STATICLM_RETURN_IF_ERROR(
        DeviceAlloc(sizing_.device_attention_partials, "the attention splits", &p));
    buffers_.attention_partials = static_cast<float*>(p);
  }
  if (sizing_.device_attention_arrivals > 0) {
    void* p = nullptr;
    STATICLM_RETURN_IF_ERROR(
        DeviceAlloc(sizing_.device_attention_arrivals, "the attention split counts", &p));
    buffers_.attention_arrivals = static_cast<int32_t*>(p);
    STATICLM_RETURN_IF_ERROR(
        CudaCall(cudaMemset(p, 0, sizing_.device_attention_arrivals), "clearing"));
  }
  void* step = nullptr;
  STATICLM_RETURN_IF_ERROR(DeviceAlloc(sizeof(DeviceStepBlock), "the step values", &step));
  device_step_ = static_cast<DeviceStepBlock*>(step);
  void* pinned = nullptr;
  STATICLM_RETURN_IF_ERROR(
      PinnedAlloc(sizing_.pinned_total, "the step's inputs and logits", &pinned));
  pinned_ = static_cast<uint8_t*>(pinned);
  std::memset(pinned_, 0, sizing_.pinned_total);
  STATICLM_RETURN_IF_ERROR(
      CudaCall(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "creating a stream"));
  STATICLM_RETURN_IF_ERROR(UploadWeights());
  const int kv = static_cast<int>(BufferId::kKvCache);
  STATICLM_RETURN_IF_ERROR(CudaCall(
      cudaMemsetAsync(buffers_.base[kv], 0, sizing_.device_buffer[kv], stream_), "clearing"));
  STATICLM_RETURN_IF_ERROR(
      CudaCall(cudaMemsetAsync(device_step_, 0, sizeof(DeviceStepBlock), stream_), "clearing"));
  STATICLM_RETURN_IF_ERROR(Synchronize());
  STATICLM_RETURN_IF_ERROR(CudaCall(PreloadKernels(), "loading the kernels"));
  // Timing each op puts an event between kernels, which ends programmatic launch anyway
  // (cuda_op_timer.h): a timed backend captures without it, and its description says so.
  buffers_.programmatic_launch = WantsProgrammaticLaunch(device_) && !options_.profile_ops;
  if (options_.profile_ops) {
    STATICLM_RETURN_IF_ERROR(timer_.Prepare(plans_.data(), n_plans));
  }
  Status captured = CaptureGraphs(n_plans);
  if (!captured.ok() && buffers_.programmatic_launch) {
    // A driver that cannot capture programmatic launches gets plain ones.
    buffers_.programmatic_launch = false;
    (void)cudaGetLastError();
    captured = CaptureGraphs(n_plans);
  }
  return captured;
}

Status CudaBackend::CaptureGraphs(int n_plans) {
  for (cudaGraphExec_t g : graphs_) {
    if (g != nullptr) (void)cudaGraphExecDestroy(g);
  }
  graphs_.assign(static_cast<size_t>(n_plans), nullptr);
  for (int i = 0; i < n_plans; ++i) {
    const Plan& plan = *plans_[size_t(i)];
    // Programmatic launch for decode steps only: measured on an H100, it made SmolLM2's decode
    // 5 % faster and its 64-row prefill chunks 10 % slower (a waiting kernel's blocks hold SMs
    // that a chunk's wide products could use).
    DeviceBuffers buffers = buffers_;
    buffers.programmatic_launch = buffers_.programmatic_launch && IsDecodePlan(plan);
    STATICLM_RETURN_IF_ERROR(CapturePlanGraph(plan, buffers, &device_step_->step, stream_,
                                              timer_.EventsOf(i), &graphs_[size_t(i)]));
  }
  return Status::Ok();
}

Status CudaBackend::UploadWeights() {
  const int w = static_cast<int>(BufferId::kWeights);
  // Pageable host memory: cudaMemcpy stages it through the driver's own buffers, once.
  return CudaCall(
      cudaMemcpy(buffers_.base[w], host_.data[w], host_.bytes[w], cudaMemcpyHostToDevice),
      "uploading the weights");
}

Status CudaBackend::Usable() const {
  if (device_failure_ == nullptr) return Status::Ok();
  return Status::Error(StatusCode::kInternal, "CUDA device failed (%s); it is not used again",
                       device_failure_);
}

Status CudaBackend::Synchronize() {
  const double start = NowSeconds();
  cudaError_t e = cudaStreamSynchronize(stream_);
  sync_seconds_ += NowSeconds() - start;
  if (e == cudaSuccess) e = cudaGetLastError();
  if (e == cudaSuccess) return Status::Ok();
  device_failure_ = cudaGetErrorString(e);  // a static string; kernel faults are sticky
  return Usable();
}

const Plan* CudaBackend::PlanAt(int plan_index) const {
  if (plan_index < 0 || plan_index >= static_cast<int>(plans_.size())) return nullptr;
  return plans_[static_cast<size_t>(plan_index)];
}

Status CudaBackend::Execute(int plan_index, const StepParams& step) {
  STATICLM_RETURN_IF_ERROR(Usable());
  const Plan* plan = PlanAt(plan_index);
  if (plan == nullptr) return Status::Error(StatusCode::kInvalidState, "no such plan prepared");
  STATICLM_RETURN_IF_ERROR(CheckStep(*plan, step));
  const double start = NowSeconds();
  auto* pinned_step = reinterpret_cast<PinnedStepBlock*>(pinned_);
  FillStepValues(*plan, step, &pinned_step->step);
  const TensorRegion& tokens = plan->tensors[plan->tokens_tensor];
  const size_t token_bytes = sizeof(int32_t) * static_cast<size_t>(step.n_tokens);
  uint8_t* pinned_tokens = pinned_ + sizing_.pinned_tokens_offset;
  std::memcpy(pinned_tokens, host_.data[kIo] + tokens.offset, token_bytes);
  cudaError_t e = cudaMemcpyAsync(&device_step_->step, &pinned_step->step, sizeof(StepValues),
                                  cudaMemcpyHostToDevice, stream_);
  if (e == cudaSuccess) {
    e = cudaMemcpyAsync(buffers_.base[kIo] + tokens.offset, pinned_tokens, token_bytes,
                        cudaMemcpyHostToDevice, stream_);
  }
  if (e == cudaSuccess) e = cudaGraphLaunch(graphs_[static_cast<size_t>(plan_index)], stream_);
  const TensorRegion& logits = plan->tensors[plan->logits_tensor];
  uint8_t* pinned_logits = pinned_ + sizing_.pinned_logits_offset;
  if (e == cudaSuccess && !options_.logits_on_request) {
    e = cudaMemcpyAsync(pinned_logits, buffers_.base[kIo] + logits.offset, logits.bytes(),
                        cudaMemcpyDeviceToHost, stream_);
  }
  last_host_seconds_ = NowSeconds() - start;
  if (e != cudaSuccess) device_failure_ = cudaGetErrorString(e);
  STATICLM_RETURN_IF_ERROR(Usable());
  STATICLM_RETURN_IF_ERROR(Synchronize());
  if (!options_.logits_on_request) {
    std::memcpy(host_.data[kIo] + logits.offset, pinned_logits, logits.bytes());
  }
  last_step_seconds_ = NowSeconds() - start;
  if (timer_.prepared()) STATICLM_RETURN_IF_ERROR(timer_.Collect(plan_index, *plan, &op_profile_));
  return Status::Ok();
}

}  // namespace staticlm::cuda
