// The backends this build holds, by name. A fixed table: nothing registers at run time.
#pragma once

#include <memory>

#include "backends/backend.h"

namespace staticlm {

// Init only. Creates the backend called `name` ("cpu"); an unknown name is kInvalidArgument
// listing the names this build knows.
Status CreateBackend(const char* name, const BackendOptions& options,
                     std::unique_ptr<Backend>* out);

// Init only. The kernel choice backend `name` would make with `options` on this machine (what a
// plan file records), e.g. "avx512", "avx2" or "reference".
const char* BackendKernelChoice(const char* name, const BackendOptions& options);

// Init only. The bytes backend `name` would allocate at Prepare for copies of weights in its own
// layout (the CPU's packed Q8_0 matrices with int8 activations); 0 for the others (Vulkan's
// device copies are its own memory, not the host's). "auto" counts as the CPU, its fallback.
uint64_t BackendPackedWeightBytes(const char* name, const BackendOptions& options,
                                  const Plan* const* plans, int n_plans);

// Init only. The CPU backend's instruction-set choice for `options`, "isa avx2 (cpu has avx512
// avx2 scalar)", into `out`; the error Prepare would give when the CPU lacks the ISA asked for.
Status DescribeCpuIsaChoice(const BackendOptions& options, char* out, size_t capacity);

// Init only. One line per device the Vulkan backend could use ("0: name [type, Vulkan 1.3]")
// into `out`; kUnsupported when this build has no Vulkan backend, no driver or no device.
Status DescribeVulkanDevices(char* out, size_t capacity, int* n_devices);

// Init only. One line per CUDA device ("0: name [compute 9.0, 79.2 GiB]") into `out`;
// kUnsupported, saying why in one line, when this build has no CUDA backend, no driver or no
// device.
Status DescribeCudaDevices(char* out, size_t capacity, int* n_devices);

}  // namespace staticlm
