// `staticlm inspect`: the model's metadata and tensor types, and the planned memory — printed
// before anything is allocated.
#include <cstdio>
#include <cstring>
#include <memory>

#include "tools/staticlm/cli_options.h"
#include "tools/staticlm/commands.h"
#include "tools/staticlm/flag_values.h"

namespace staticlm::cli {
namespace {

void PrintMemory(const Options& o, const staticlm_memory& m) {
  auto mib = [](uint64_t b) { return b / 1048576.0; };
  std::printf("planned memory (ctx %d, chunk %d, batch %d, kv %s):\n", o.limits.max_context,
              o.limits.prefill_chunk, o.limits.max_batch, KvName(o.limits.kv_type));
  const bool quantized = o.limits.quantize != nullptr && o.limits.quantize[0] != '\0';
  std::printf("  %-10s %14llu bytes %10.2f MiB  (%s)\n", "weights",
              static_cast<unsigned long long>(m.weights_bytes), mib(m.weights_bytes),
              quantized ? "quantized at init" : "mapped from the file");
  if (m.packed_weights_bytes > 0) {
    std::printf(
        "  %-10s %14llu bytes %10.2f MiB  (quantized matrices packed at init for int8 "
        "activations; their file pages paged out unless tied)\n",
        "packed", static_cast<unsigned long long>(m.packed_weights_bytes),
        mib(m.packed_weights_bytes));
  }
  std::printf("  %-10s %14llu bytes %10.2f MiB\n", "kv_cache",
              static_cast<unsigned long long>(m.kv_cache_bytes), mib(m.kv_cache_bytes));
  if (m.kv_ring_bytes > 0) {
    std::printf("    %-8s %14llu bytes %10.2f MiB  (layers with a ring: sliding window or sinks)\n",
                "ring", static_cast<unsigned long long>(m.kv_ring_bytes), mib(m.kv_ring_bytes));
    std::printf("    %-8s %14llu bytes %10.2f MiB  (layers that keep the whole context)\n",
                "global", static_cast<unsigned long long>(m.kv_global_bytes),
                mib(m.kv_global_bytes));
    std::printf(
        "    %-8s %14llu bytes %10.2f MiB  (every layer global, as a StaticCache: "
        "%.1f x this cache)\n",
        "static", static_cast<unsigned long long>(m.kv_all_global_bytes),
        mib(m.kv_all_global_bytes),
        static_cast<double>(m.kv_all_global_bytes) / static_cast<double>(m.kv_cache_bytes));
  }
  std::printf("  %-10s %14llu bytes %10.2f MiB  (lower bound %llu, no sharing %llu)\n", "arena",
              static_cast<unsigned long long>(m.arena_bytes), mib(m.arena_bytes),
              static_cast<unsigned long long>(m.arena_lower_bound_bytes),
              static_cast<unsigned long long>(m.arena_naive_bytes));
  std::printf("  %-10s %14llu bytes %10.2f MiB\n", "io",
              static_cast<unsigned long long>(m.io_bytes), mib(m.io_bytes));
  std::printf("  %-10s %14llu bytes %10.2f MiB\n", "host",
              static_cast<unsigned long long>(m.host_bytes), mib(m.host_bytes));
  std::printf("  %-10s %14llu bytes %10.2f MiB  (slots and session file buffer)\n", "snapshots",
              static_cast<unsigned long long>(m.snapshot_bytes), mib(m.snapshot_bytes));
  std::printf("  %-10s %14llu bytes %10.2f MiB\n", "total",
              static_cast<unsigned long long>(m.total_bytes), mib(m.total_bytes));
}

}  // namespace

// One backend's device listing (staticlm_list_devices or staticlm_list_cuda_devices).
struct DeviceList {
  char lines[4096];
  char error[256];
  int n = 0;
  bool ok = false;
};

void ListDevices(staticlm_status (*list)(char*, size_t, int*, char*, size_t), DeviceList* out) {
  out->ok =
      list(out->lines, sizeof(out->lines), &out->n, out->error, sizeof(out->error)) == STATICLM_OK;
}

// `staticlm inspect --devices`: the Vulkan devices, for --device N, and the CUDA devices when
// the build has the CUDA backend, each with one line saying why none are listed when there are
// none. Fails in one line, naming both reasons, when no backend lists a device.
int PrintDevices() {
  DeviceList vulkan, cuda;
  ListDevices(staticlm_list_devices, &vulkan);
  ListDevices(staticlm_list_cuda_devices, &cuda);
#if defined(STATICLM_HAVE_CUDA)
  const bool cuda_built = true;
#else
  const bool cuda_built = false;  // as before the CUDA backend: the Vulkan devices alone
#endif
  if (!vulkan.ok && !cuda.ok) {
    if (cuda_built) {
      std::fprintf(stderr, "staticlm: %s; CUDA: %s\n", vulkan.error, cuda.error);
    } else {
      std::fprintf(stderr, "staticlm: %s\n", vulkan.error);
    }
    return 1;
  }
  if (vulkan.ok) {
    std::printf("Vulkan devices (%d):\n%s", vulkan.n, vulkan.lines);
  } else {
    std::printf("Vulkan devices: none (%s)\n", vulkan.error);
  }
  if (cuda.ok) {
    std::printf("CUDA devices (%d):\n%s", cuda.n, cuda.lines);
  } else if (cuda_built) {
    std::printf("CUDA devices: none (%s)\n", cuda.error);
  }
  return 0;
}

int InspectCommand(int argc, char** argv) {
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--devices") == 0) return PrintDevices();
  }
  Options o;
  if (!ParseOptions(argc, argv, 2, &o)) return 2;
  constexpr size_t kDescriptionBytes = 1 << 16;
  std::unique_ptr<char[]> description(new char[kDescriptionBytes]);
  char error[256];
  if (staticlm_describe_model(o.model, description.get(), kDescriptionBytes, error,
                              sizeof(error)) != STATICLM_OK) {
    std::fprintf(stderr, "staticlm: %s\n", error);
    return 1;
  }
  std::fputs(description.get(), stdout);
  staticlm_memory memory;
  if (staticlm_plan_memory(o.model, &o.limits, &memory, error, sizeof(error)) != STATICLM_OK) {
    std::fprintf(stderr, "staticlm: %s\n", error);
    return 1;
  }
  PrintMemory(o, memory);
  char isa[128];
  if (staticlm_cpu_isa(&o.limits, isa, sizeof(isa), error, sizeof(error)) != STATICLM_OK) {
    std::fprintf(stderr, "staticlm: %s\n", error);
    return 1;
  }
  std::printf("cpu kernels: %s\n", isa);
  return 0;
}

}  // namespace staticlm::cli
