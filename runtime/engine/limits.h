// EngineLimits: what the caller chooses at init — the sizes every buffer is planned for, the
// backend and its options, the cache policy. Read by Model::Load (max_prompt_bytes), Program
// (the rest) and the Engine (max_snapshots).
#pragma once

#include <cstdint>

#include "contract/dtype.h"

namespace staticlm {

struct EngineLimits {
  int32_t max_context = 2048;
  int32_t max_batch = 1;
  int32_t prefill_chunk = 64;
  int32_t max_prompt_bytes = 16384;
  DType kv_dtype = DType::kF16;
  int32_t threads = 1;
  bool reference_kernels = false;
  bool busy_wait = false;
  bool pin_threads = false;
  bool profile_ops = false;  // CPU, Vulkan, CUDA: time each op into the backend's OpProfile
  // A plan file to load instead of building plans; its limits replace max_context,
  // max_batch, prefill_chunk and kv_dtype above. Borrowed for the Load call.
  const char* plan_path = nullptr;
  // Fusion passes not to apply (runtime/plan/fusion_passes.h); the rest are applied.
  uint32_t disabled_fusions = 0;
  // The backend by name: "cpu", "vulkan", "cuda" or "auto" (the first of cuda,
  // vulkan and cpu that prepares).
  char backend[16] = "cpu";
  int32_t device = 0;  // Vulkan or CUDA device index
  // Pre-fault and mlock the weights, cache, arena and io at init (a note says when the system
  // does not allow locking).
  bool lock_memory = false;
  // Cache policy (0, 0: static). See include/staticlm/staticlm.h.
  int32_t window = 0;  // −1: from the model's metadata
  int32_t sinks = 0;
  int32_t global_every = 0;
  // Resolved by Program::Build, not set by callers: sinks on a model with its own window and
  // global layers (Gemma 3) bound those layers to Sink(sinks, the window asked for), and
  // `window` becomes the model's (PlanLimits::global_window).
  int32_t global_window = 0;
  // Snapshot slots (SaveSnapshot / RestoreSnapshot), each as large as the KV cache plus the
  // history and logits, allocated at init. 0: none.
  int32_t max_snapshots = 0;
  // Vulkan: a pipeline cache file, loaded at init when valid and written after; nullptr:
  // "<plan_path>.vkcache" when plan_path is set, else none. Borrowed for the Init call.
  const char* pipeline_cache_path = nullptr;
  // CPU: 0 (f32 activations), 16 or 8 (BackendOptions::quantized_activations).
  int32_t activation_bits = 0;
  // A Hugging Face folder's weight quantization at init ("q8_0", "q4_0", "q4_k"); nullptr or
  // "": none. Borrowed for the Load call.
  const char* quantize = nullptr;
  // CPU: "auto", "avx512", "avx2", "neon" or "scalar" (BackendOptions::isa).
  char isa[16] = "auto";
  // The KV cache, arena, io buffer and the CPU's packed weights on huge pages where the system
  // allows (platform/huge_pages.h); false: normal pages.
  bool huge_pages = true;
};

}  // namespace staticlm
