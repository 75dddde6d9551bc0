// The every-op test's cases merged into one set of four buffers, so that one backend prepares
// them all at once (one Prepare of many plans, as the engine's decode and prefill plans share
// their buffers) and a device backend makes each shader's pipeline once instead of once per
// case (lavapipe compiles a pipeline in about a second). Case i's tensors are moved past the
// cases before it; each case's plan is plan i of the set.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/backend.h"
#include "tests/support/op_cases.h"

namespace staticlm::optest {

struct CaseSet {
  std::vector<OpCase> cases;                 // relocated: offsets into the set's buffers
  std::vector<uint64_t> base[kBufferCount];  // case i's region of buffer b starts at base[b][i]
  std::vector<uint64_t> size[kBufferCount];  // and spans size[b][i] bytes
  std::vector<uint8_t> bytes[kBufferCount];  // the initial contents (inputs, cache, weights)
};

// Merges `cases` (their harness buffers copied into the set's).
CaseSet MergeCases(const std::vector<OpCase>& cases);

// What one case's run left: its arena region after each step and its cache region at the end.
struct CaseOutput {
  Status run;
  std::vector<std::vector<uint8_t>> arena_after_step;
  std::vector<uint8_t> cache;
};

// Prepares every plan of `set` on `backend` (the set's buffers are copied first: the backend
// gets its own host memory), uploads the cache and arena, runs each case's steps in turn and
// reads its regions back. *prepare is Prepare's status; outputs are empty when it failed.
std::vector<CaseOutput> RunCaseSet(Backend& backend, const CaseSet& set, Status* prepare);

// The f32 values (F32 or F16 tensors) of `tensor` of case `index`, its first `rows` rows (all
// when rows < 0), from `region`: that case's region of the tensor's buffer.
std::vector<float> CaseValues(const CaseSet& set, size_t index, uint32_t tensor,
                              const std::vector<uint8_t>& region, int64_t rows = -1);

}  // namespace staticlm::optest
