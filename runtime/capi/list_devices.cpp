// staticlm_list_devices and staticlm_list_cuda_devices: the Vulkan and CUDA devices `--device N`
// can name (`staticlm inspect --devices`).
#include <cstdio>

#include "backends/backend_registry.h"
#include "staticlm/staticlm.h"

namespace {

using Describe = staticlm::Status (*)(char* out, size_t capacity, int* n_devices);

staticlm_status ListDevices(Describe describe, char* out, size_t capacity, int* n_devices,
                            char* error, size_t error_capacity) {
  int n = 0;
  staticlm::Status s =
      out == nullptr && capacity > 0
          ? staticlm::Status::Error(staticlm::StatusCode::kInvalidArgument, "out is NULL")
          : describe(out, capacity, &n);
  if (n_devices != nullptr) *n_devices = n;
  if (!s.ok() && error != nullptr && error_capacity > 0) {
    std::snprintf(error, error_capacity, "%s", s.message());
  }
  return static_cast<staticlm_status>(static_cast<int>(s.code()));
}

}  // namespace

extern "C" staticlm_status staticlm_list_devices(char* out, size_t capacity, int* n_devices,
                                                 char* error, size_t error_capacity) {
  return ListDevices(staticlm::DescribeVulkanDevices, out, capacity, n_devices, error,
                     error_capacity);
}

extern "C" staticlm_status staticlm_list_cuda_devices(char* out, size_t capacity, int* n_devices,
                                                      char* error, size_t error_capacity) {
  return ListDevices(staticlm::DescribeCudaDevices, out, capacity, n_devices, error,
                     error_capacity);
}
