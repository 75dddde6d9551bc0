// The CUDA backend's only way to allocate and free device and pinned host memory: every
// cudaMalloc, cudaFree, cudaHostAlloc and cudaFreeHost goes through these wrappers, which count
// the calls, so a test can assert that none happens after Prepare.
#pragma once

#include <cstdint>

#include "platform/status.h"

namespace staticlm::cuda {

// Process-wide totals of the calls made through the wrappers below.
struct CudaAllocCounts {
  uint64_t device_allocs = 0;  // cudaMalloc
  uint64_t device_frees = 0;   // cudaFree
  uint64_t host_allocs = 0;    // cudaHostAlloc
  uint64_t host_frees = 0;     // cudaFreeHost
  uint64_t total() const { return device_allocs + device_frees + host_allocs + host_frees; }
};
CudaAllocCounts AllocCounts();

// Init only. `bytes` of device memory into *out; `what` names it in the error ("the KV cache").
Status DeviceAlloc(uint64_t bytes, const char* what, void** out);
// Init only. `bytes` of page-locked host memory (cudaHostAllocDefault) into *out.
Status PinnedAlloc(uint64_t bytes, const char* what, void** out);
// Teardown. Null does nothing and is not counted.
void DeviceFree(void* p);
void PinnedFree(void* p);

}  // namespace staticlm::cuda
