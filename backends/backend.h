// The backend interface: Prepare once at init, Execute every step.
#pragma once

#include <cstdint>

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
  int device = 0;  // Vulkan: the physical device index
  // Vulkan: a VkPipelineCache file, loaded at Prepare when valid for this driver and device
  // (ignored with a note when stale or corrupt) and written after the pipelines are made;
  // empty: no cache.
  char pipeline_cache_path[512] = {0};
  // Execute may leave the logits in the backend's own memory (Vulkan: the device io buffer);
  // the caller then copies them with FetchLogits when it needs them. Ignored by backends whose
  // logits are written to the host io buffer anyway (CPU).
  bool logits_on_request = false;
};

// A token choice a backend may make where the logits are (Backend::SampleOnDevice), with the
// semantics of runtime/sampler for the same parameters and no repetition penalty, top-p or
// min-p: greedy (the argmax, ties to the lowest id), or top-k with temperature (the k highest
// logits, ties to the lower id, softmax of logit / temperature over them, the token whose
// cumulative weight in descending order first exceeds uniform · total).
struct DeviceSampling {
  int32_t top_k = 0;         // 0: greedy; else 1 … Backend::max_device_top_k()
  float temperature = 1.0f;  // top-k: finite, > 0
  double uniform = 0.0;      // top-k: the caller's draw in [0, 1)
};

class Backend {
 public:
  virtual ~Backend() = default;
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
  // Run phase: copy `bytes` at `offset` of buffer `id` (kKvCache or kIo) to or from host
  // memory, e.g. to snapshot or restore the cache. Bounds are checked; no allocation.
  virtual Status ReadBuffer(BufferId id, uint64_t offset, uint64_t bytes, void* dst) = 0;
  virtual Status WriteBuffer(BufferId id, uint64_t offset, uint64_t bytes, const void* src) = 0;
  // Run phase: copy `bytes` within buffer `id` from `src_offset` to `dst_offset` (the regions
  // do not overlap), without passing through the host.
  virtual Status CopyWithinBuffer(BufferId id, uint64_t src_offset, uint64_t dst_offset,
                                  uint64_t bytes) = 0;
  // Run phase: true when the last Execute left its logits only in the backend's memory (see
  // BackendOptions::logits_on_request); the host io buffer's logits are stale until
  // FetchLogits.
  virtual bool logits_stay_on_device() const { return false; }
  // Run phase: copies rows [first_row, first_row + n_rows) of plan `plan_index`'s logits, as
  // its last Execute wrote them, to the host io buffer, where Execute would have put them.
  // Bounds are checked; no allocation. A backend whose logits are already there does nothing.
  virtual Status FetchLogits(int plan_index, int32_t first_row, int32_t n_rows) {
    (void)plan_index, (void)first_row, (void)n_rows;
    return Status::Ok();
  }
  // Run phase: the largest top_k SampleOnDevice takes; 0 when the backend does not sample.
  virtual int32_t max_device_top_k() const { return 0; }
  // Run phase: chooses a token from row `row` of the logits plan `plan_index` wrote in the last
  // Execute, where they are, and writes only its id to *token. Never allocates. Fails as the
  // host sampler does for NaN/+inf logits or all -inf (kInvalidArgument, same messages);
  // kUnsupported when the backend cannot (the default).
  virtual Status SampleOnDevice(int plan_index, int32_t row, const DeviceSampling& sampling,
                                int32_t* token) {
    (void)plan_index, (void)row, (void)sampling, (void)token;
    return Status::Error(StatusCode::kUnsupported, "this backend does not sample on its device");
  }
  // What Prepare wants the user told (e.g. whether a pipeline cache was loaded); "" if nothing.
  virtual const char* prepare_note() const { return ""; }
  // Seconds spent waiting on other threads since the last reset; 0 for single-threaded ones.
  virtual double sync_seconds() const { return 0.0; }
  virtual void ResetSyncSeconds() {}
};

}  // namespace staticlm
