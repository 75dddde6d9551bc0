#include "backends/cuda/cuda_device.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>

#include "platform/driver_scope.h"

namespace staticlm::cuda {
namespace {

// The oldest compute capability the kernels are built for (CMAKE_CUDA_ARCHITECTURES: 80 and
// up, plus PTX of 90 for newer devices).
constexpr int kMinMajor = 8;

double MiB(uint64_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

// Every function here runs the CUDA runtime's first calls (driver initialisation, context
// creation), which start the driver's own threads: inside a driver_scope::Scope, those threads
// and their heap events count as the driver's (platform/driver_scope.h), not staticlm's.
Status CountDevices(int* n) {
  driver_scope::Scope driver;
  cudaError_t e = cudaGetDeviceCount(n);
  if (e == cudaSuccess && *n > 0) return Status::Ok();
  (void)cudaGetLastError();  // a failed query is not an error for later calls
  if (e == cudaErrorInsufficientDriver) {
    return Status::Error(StatusCode::kUnsupported,
                         "no CUDA driver (or one older than this build's CUDA runtime)");
  }
  if (e == cudaSuccess || e == cudaErrorNoDevice) {
    return Status::Error(StatusCode::kUnsupported, "no CUDA device found");
  }
  return Status::Error(StatusCode::kUnsupported, "cannot list CUDA devices (%s)",
                       cudaGetErrorString(e));
}

}  // namespace

Status ChooseDevice(int index, uint64_t needed_bytes, const char* needed_what, DeviceChoice* out) {
  driver_scope::Scope driver;
  int n = 0;
  STATICLM_RETURN_IF_ERROR(CountDevices(&n));
  if (index < 0 || index >= n) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "CUDA device %d does not exist (this machine has %d: 0 to %d)", index, n,
                         n - 1);
  }
  cudaDeviceProp prop;
  cudaError_t e = cudaGetDeviceProperties(&prop, index);
  if (e == cudaSuccess) e = cudaSetDevice(index);
  size_t free_bytes = 0, total_bytes = 0;
  if (e == cudaSuccess) e = cudaMemGetInfo(&free_bytes, &total_bytes);
  if (e != cudaSuccess) {
    return Status::Error(StatusCode::kUnsupported, "cannot use CUDA device %d (%s)", index,
                         cudaGetErrorString(e));
  }
  out->index = index;
  std::snprintf(out->name, sizeof(out->name), "%s", prop.name);
  out->major = prop.major;
  out->minor = prop.minor;
  out->free_bytes = free_bytes;
  out->total_bytes = total_bytes;
  if (prop.major < kMinMajor) {
    return Status::Error(StatusCode::kUnsupported,
                         "CUDA device %d (%s) has compute capability %d.%d; this build needs %d.0 "
                         "or newer",
                         index, prop.name, prop.major, prop.minor, kMinMajor);
  }
  if (needed_bytes > free_bytes) {
    return Status::Error(StatusCode::kOutOfMemory,
                         "CUDA device %d (%s) has too little free memory: needs %.1f MiB (%s), "
                         "%.1f MiB free of %.1f MiB",
                         index, prop.name, MiB(needed_bytes), needed_what, MiB(free_bytes),
                         MiB(total_bytes));
  }
  return Status::Ok();
}

Status DescribeDevices(char* out, size_t capacity, int* n_devices) {
  driver_scope::Scope driver;
  *n_devices = 0;
  if (capacity > 0) out[0] = '\0';
  int n = 0;
  STATICLM_RETURN_IF_ERROR(CountDevices(&n));
  size_t used = 0;
  for (int i = 0; i < n && capacity > 0; ++i) {
    cudaDeviceProp prop;
    cudaError_t e = cudaGetDeviceProperties(&prop, i);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      return Status::Error(StatusCode::kUnsupported, "cannot read CUDA device %d (%s)", i,
                           cudaGetErrorString(e));
    }
    const int w =
        std::snprintf(out + used, capacity - used, "%d: %s [compute %d.%d, %.1f GiB]\n", i,
                      prop.name, prop.major, prop.minor, MiB(prop.totalGlobalMem) / 1024.0);
    if (w > 0) used = std::min(capacity - 1, used + static_cast<size_t>(w));
  }
  *n_devices = n;
  return Status::Ok();
}

}  // namespace staticlm::cuda
