// Plan files: the plans a model needs under given limits, saved ahead of time and loaded
// without building anything (staticlm plan -o, staticlm run --plan).
//
// Layout (little-endian): a 64-byte header — magic "SLMPLAN\0", format version, payload size,
// FNV-1a checksum of the payload, the model's fingerprint — then the payload: backend name,
// kernel choice, limits, and for each plan its limits, buffer sizes, arena report, tensors and
// ops as fixed-size records. Loading is a bounded, validating parse: a file for another model,
// format version or backend, a changed byte or a truncation is a clear error, never a crash.
#pragma once

#include <cstdint>

#include "contract/plan.h"
#include "platform/status.h"
#include "runtime/plan/memory_planner.h"

namespace staticlm {

// 5: ops carry rope_scale; kAddBias and kRope frequency factors.
// 6: ops carry rope_dims (partial RoPE).
// 7: the limits carry global_window (sinks on a hybrid model's global layers).
constexpr uint32_t kPlanFormatVersion = 7;

struct PlanFileContents {
  uint64_t model_fingerprint = 0;
  char backend[16] = {0};  // "cpu"
  char kernels[32] = {0};  // the backend's kernel choice, e.g. "avx512"
  int32_t n_plans = 0;     // 1 or 2: [0] decode, [1] prefill
  Plan plans[2];
  ArenaReport arenas[2];
};

// Init only. Writes atomically (a temporary file renamed over `path`).
Status SavePlanFile(const char* path, const PlanFileContents& contents);

// Init only. Reads and checks `path`: magic, version, size, checksum, then every record. It
// does not check the fingerprint or backend against the caller's (see CheckPlanFileMatches).
Status LoadPlanFile(const char* path, PlanFileContents* contents);

// Parses bytes already in memory (tests, fuzzing); same checks as LoadPlanFile.
Status ParsePlanFile(const uint8_t* data, size_t size, PlanFileContents* contents);

}  // namespace staticlm
