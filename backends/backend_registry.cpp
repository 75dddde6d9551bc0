#include "backends/backend_registry.h"

#include <cstring>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_isa.h"
#if defined(STATICLM_HAVE_VULKAN)
#include "backends/vulkan/vulkan_backend.h"
#endif
#if defined(STATICLM_HAVE_CUDA)
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_device.h"
#endif

namespace staticlm {
namespace {

struct Entry {
  const char* name;
  std::unique_ptr<Backend> (*create)(const BackendOptions& options);
};

const Entry kBackends[] = {
    {"cpu",
     [](const BackendOptions& o) { return std::unique_ptr<Backend>(new cpu::CpuBackend(o)); }},
#if defined(STATICLM_HAVE_VULKAN)
    {"vulkan",
     [](const BackendOptions& o) {
       return std::unique_ptr<Backend>(new vulkan::VulkanBackend(o));
     }},
#endif
#if defined(STATICLM_HAVE_CUDA)
    {"cuda",
     [](const BackendOptions& o) { return std::unique_ptr<Backend>(new cuda::CudaBackend(o)); }},
#endif
};

}  // namespace

Status CreateBackend(const char* name, const BackendOptions& options,
                     std::unique_ptr<Backend>* out) {
  for (const Entry& e : kBackends) {
    if (std::strcmp(e.name, name) == 0) {
      *out = e.create(options);
      return Status::Ok();
    }
  }
  const char* available =
      "cpu"
#if defined(STATICLM_HAVE_VULKAN)
      ", vulkan"
#endif
#if defined(STATICLM_HAVE_CUDA)
      ", cuda"
#endif
#if !defined(STATICLM_HAVE_VULKAN)
      "; built without Vulkan"
#endif
#if !defined(STATICLM_HAVE_CUDA)
      "; built without CUDA"
#endif
      ;
  return Status::Error(StatusCode::kInvalidArgument, "unknown backend '%s' (this build has: %s)",
                       name, available);
}

const char* BackendKernelChoice(const char* name, const BackendOptions& options) {
  if (std::strcmp(name, "cpu") == 0) return cpu::CpuBackend::KernelChoice(options);
  return "";
}

uint64_t BackendPackedWeightBytes(const char* name, const BackendOptions& options,
                                  const Plan* const* plans, int n_plans) {
  if (std::strcmp(name, "cpu") != 0 && std::strcmp(name, "auto") != 0) return 0;
  return cpu::CpuBackend::PackedWeightBytes(plans, n_plans, options);
}

Status DescribeCpuIsaChoice(const BackendOptions& options, char* out, size_t capacity) {
  return cpu::DescribeIsaChoice(options, out, capacity);
}

Status DescribeVulkanDevices(char* out, size_t capacity, int* n_devices) {
#if defined(STATICLM_HAVE_VULKAN)
  return vulkan::DescribeVulkanDevices(out, capacity, n_devices);
#else
  *n_devices = 0;
  if (capacity > 0) out[0] = '\0';
  return Status::Error(StatusCode::kUnsupported, "this build has no Vulkan backend");
#endif
}

Status DescribeCudaDevices(char* out, size_t capacity, int* n_devices) {
#if defined(STATICLM_HAVE_CUDA)
  return cuda::DescribeDevices(out, capacity, n_devices);
#else
  *n_devices = 0;
  if (capacity > 0) out[0] = '\0';
  return Status::Error(StatusCode::kUnsupported, "this build has no CUDA backend");
#endif
}

}  // namespace staticlm
