#include "backends/cuda/cuda_memory.h"

#include <cuda_runtime_api.h>

#include <atomic>

namespace staticlm::cuda {
namespace {

std::atomic<uint64_t> g_device_allocs{0};
std::atomic<uint64_t> g_device_frees{0};
std::atomic<uint64_t> g_host_allocs{0};
std::atomic<uint64_t> g_host_frees{0};

double MiB(uint64_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

}  // namespace

CudaAllocCounts AllocCounts() {
  CudaAllocCounts c;
  c.device_allocs = g_device_allocs.load();
  c.device_frees = g_device_frees.load();
  c.host_allocs = g_host_allocs.load();
  c.host_frees = g_host_frees.load();
  return c;
}

Status DeviceAlloc(uint64_t bytes, const char* what, void** out) {
  g_device_allocs.fetch_add(1);
  // A zero-byte buffer still gets an address, so that every plan buffer has a base.
  cudaError_t e = cudaMalloc(out, bytes == 0 ? 16 : bytes);
  if (e == cudaSuccess) return Status::Ok();
  *out = nullptr;
  return Status::Error(StatusCode::kOutOfMemory, "CUDA: cannot allocate %.1f MiB for %s (%s)",
                       MiB(bytes), what, cudaGetErrorString(e));
}

Status PinnedAlloc(uint64_t bytes, const char* what, void** out) {
  g_host_allocs.fetch_add(1);
  cudaError_t e = cudaHostAlloc(out, bytes == 0 ? 16 : bytes, cudaHostAllocDefault);
  if (e == cudaSuccess) return Status::Ok();
  *out = nullptr;
  return Status::Error(StatusCode::kOutOfMemory,
                       "CUDA: cannot allocate %.1f MiB of pinned host memory for %s (%s)",
                       MiB(bytes), what, cudaGetErrorString(e));
}

void DeviceFree(void* p) {
  if (p == nullptr) return;
  g_device_frees.fetch_add(1);
  (void)cudaFree(p);  // teardown: a failed free (a lost device) leaves nothing to do
}

void PinnedFree(void* p) {
  if (p == nullptr) return;
  g_host_frees.fetch_add(1);
  (void)cudaFreeHost(p);
}

}  // namespace staticlm::cuda
