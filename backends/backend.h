// The backend interface: Prepare once at init, Execute every step.
#pragma once

#include <cstdint>

#include "backends/buffer_access.h"
#include "backends/device_logits.h"
#include "backends/op_profile.h"
#include "contract/plan.h"
#include "platform/status.h"

namespace staticlm {

// How a backend should run, chosen by the user at init.
struct BackendOptions {
  int threads = 1;                 // CPU: worker threads including the caller, created at init
  bool busy_wait = false;          // CPU: workers spin between ops instead of sleeping
  bool pin_threads = false;        // CPU: pin worker i to core i
  bool reference_kernels = false;  // CPU: the plain reference kernels (the oracle) only
  // CPU: 0 keeps f32 activations; 8 or 16 makes products with Q4_0/Q4_1/Q8_0 weights quantize
  // their activations to int8/int16 per block of 32 and use integer dot products
  // (backends/cpu/matmul_int8.h) where the CPU has them (AVX-512 VNNI; with reference_kernels,
  // the integer reference), else f32 activations as usual. int8 moves SmolLM2's logits by ~1
  // (outside the golden tolerance); int16 stays within it.
  int quantized_activations = 0;
  // The kernel choice to use instead of choosing by CPU features (from a plan file), e.g.
  // "avx512"; empty: choose. A choice this machine cannot run fails Prepare.
  char kernels[32] = {0};
  // CPU: the instruction set to run (backends/cpu/cpu_isa.h): "auto" (or empty) for the best
  // the CPU has, else "avx512", "avx2", "neon" or "scalar"; one the CPU lacks fails Prepare.
  // Anything but "auto" wins over a plan file's kernels; reference_kernels wins over both.
  char isa[16] = "auto";
  int device = 0;  // Vulkan: the physical device index
  // Vulkan: a VkPipelineCache file, loaded at Prepare when valid for this driver and device
  // (ignored with a note when stale or corrupt) and written after the pipelines are made;
  // empty: no cache.
  char pipeline_cache_path[512] = {0};
  // Execute may leave the logits in the backend's own memory (Vulkan: the device io buffer);
  // the caller then copies them with FetchLogits when it needs them. Ignored by backends whose
  // logits are written to the host io buffer anyway (CPU).
  bool logits_on_request = false;
  // Time every op of every step into the backend's OpProfile: CPU, two clock reads per op;
  // Vulkan, a device timestamp after each dispatch (Prepare fails on a device without them).
  bool profile_ops = false;
  // CPU: put the packed weights on huge pages where the system allows (platform/huge_pages.h).
  bool huge_pages = true;
};

// A backend is Prepare at init and Execute every step, plus two separate concerns, each its
// own interface: host access to its buffers (BufferAccess: snapshots, session files) and the
// logits where it computed them (DeviceLogits: fetched on request, sampled on the device).
class Backend : public BufferAccess, public DeviceLogits {
 public:
  ~Backend() override = default;
  virtual const char* name() const = 0;
  // A one-line description of the choices Prepare made (kernels, threads), for reports.
  virtual const char* description() const = 0;
  // Init only: validates each plan against the buffers (which all plans share: a decode plan
  // and a prefill plan use the same weights, cache and arena) and creates whatever the backend
  // needs. The plans are borrowed and must outlive the backend. May allocate.
  virtual Status Prepare(const Plan* const* plans, int n_plans, const BufferBinding& buffers) = 0;
  // Run phase: walks plan `plan_index` once for one step. Never allocates, blocks on I/O or
  // creates threads; errors carry static messages.
  // The io buffer is the host's: Execute reads the step's inputs (token ids) from the bound
  // host io memory and, when it returns, the outputs (logits) are there. The KV cache and the
  // arena may live in the backend's own memory (a device); the host reaches the cache only
  // through ReadBuffer / WriteBuffer.
  virtual Status Execute(int plan_index, const StepParams& step) = 0;
  // What Prepare wants the user told (e.g. whether a pipeline cache was loaded); "" if nothing.
  virtual const char* prepare_note() const { return ""; }
  // Seconds spent waiting on other threads since the last reset; 0 for single-threaded ones.
  virtual double sync_seconds() const { return 0.0; }
  virtual void ResetSyncSeconds() {}
  // The time each kind of op took (BackendOptions::profile_ops), or nullptr when this backend
  // keeps no profile or was not asked to. Run phase; never allocates.
  virtual const OpProfile* op_profile() const { return nullptr; }
  virtual void ResetOpProfile() {}
};

}  // namespace staticlm
