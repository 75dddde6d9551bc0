// A device backend against the CPU backend on a real model through the C API: logits after a
// prefill that spans several chunks and at every greedy decode step, and the greedy
// continuation token for token. Shared by the Vulkan and CUDA parity tests.
//
// Tolerance. Both backends dequantize the same weights and accumulate in f32 with the same
// cache type; only the summation order differs (SIMD lanes on the CPU, reductions in a tree on
// a device). kLogitTolerance = 0.1 is the golden tests' bound for the f16 cache and their
// near-tie rule: where the CPU's top-2 gap is below it, summation order may flip the argmax. A
// real mistake (a wrong RoPE pair, a missed fusion, an off-by-one slot) moves logits by units.
//
// Quantized caches. Given the same k and v, a device's q8/q4 codes are the CPU reference's bit
// for bit, but k and v themselves differ in their last bits (summation order), and a value on a
// rounding boundary then gets the neighbouring code: one q8 step is 1/127 of the row's largest
// value, 16x an f16 step, so logits move by up to ~0.2 over 30 layers. The CPU's own fast and
// reference kernels differ in the same way, so for a quantized cache the bound is twice their
// largest difference on the same tokens (at least kLogitTolerance), measured alongside.
#pragma once

#include <cstdint>
#include <string>

#include "staticlm/staticlm.h"

namespace staticlm::test {

inline constexpr float kLogitTolerance = 0.1f;

// The cache configuration and run both backends get: the static f16 cache by default.
struct ParityMode {
  int32_t window = 0;  // STATICLM_WINDOW_FROM_MODEL for a model's own (hybrid) windows
  int32_t sinks = 0;
  staticlm_kv_type kv = STATICLM_KV_F16;
  int32_t max_context = 256;
  int32_t prefill_chunk = 16;
  int steps = 24;          // greedy decode steps
  int prompt_repeats = 1;  // the prompt text this many times (a prompt past a window)
  // At a near tie go on feeding both backends the CPU's token instead of stopping, so that
  // every step's logits are still compared: what the long runs need.
  bool continue_past_ties = false;
};

// Whether staticlm_create's message says that this machine or build has no device of the
// backend (then the test skips) rather than that the backend refused the model or mode.
using NoDevicePredicate = bool (*)(const std::string& create_error);

// Runs the comparison on `backend` (device 0) against "cpu" for `model`, with gtest
// expectations. Skips the test (GTEST_SKIP) when the backend's context cannot be created and
// `no_device` says why is a missing device; any other failure to create it fails the test.
void CompareGreedyWithCpu(const char* backend, const char* model, const ParityMode& mode,
                          NoDevicePredicate no_device);

}  // namespace staticlm::test
