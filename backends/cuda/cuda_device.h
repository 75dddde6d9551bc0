// Choosing the CUDA device at Prepare: a one-line error for no driver, no device, a device
// index out of range, a device older than this build's kernels or too little free memory; and
// listing the devices (`staticlm inspect --devices`) with the same one-line reasons.
#pragma once

#include <cstddef>
#include <cstdint>

#include "platform/status.h"

namespace staticlm::cuda {

struct DeviceChoice {
  int index = 0;
  char name[256] = {0};
  int major = 0, minor = 0;  // compute capability
  uint64_t free_bytes = 0, total_bytes = 0;
};

// Init only. Makes device `index` current (cudaSetDevice) when it exists and has at least
// `needed_bytes` free; `needed_what` describes the need in the error ("device 512.0 MiB (...)").
Status ChooseDevice(int index, uint64_t needed_bytes, const char* needed_what, DeviceChoice* out);

// Init only. One line per CUDA device into `out` (NUL-terminated, truncated to `capacity`):
// "0: NVIDIA H100 80GB HBM3 [compute 9.0, 79.2 GiB]", the index being BackendOptions' device;
// `*n_devices` gets the count. kUnsupported with one line saying why when there is no driver
// or no device. Creates no CUDA context.
Status DescribeDevices(char* out, size_t capacity, int* n_devices);

}  // namespace staticlm::cuda
