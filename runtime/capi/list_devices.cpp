// staticlm_list_devices: the Vulkan devices `--device N` can name (`staticlm inspect
// --devices`).
#include <cstdio>

#include "backends/backend_registry.h"
#include "staticlm/staticlm.h"

extern "C" staticlm_status staticlm_list_devices(char* out, size_t capacity, int* n_devices,
                                                 char* error, size_t error_capacity) {
  int n = 0;
  staticlm::Status s = staticlm::DescribeVulkanDevices(out, capacity, &n);
  if (n_devices != nullptr) *n_devices = n;
  if (!s.ok() && error != nullptr && error_capacity > 0) {
    std::snprintf(error, error_capacity, "%s", s.message());
  }
  return static_cast<staticlm_status>(static_cast<int>(s.code()));
}
