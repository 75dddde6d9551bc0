#include "tests/support/op_case_set.h"

#include <cstring>

#include "backends/cpu/half.h"

namespace staticlm::optest {

CaseSet MergeCases(const std::vector<OpCase>& cases) {
  CaseSet set;
  set.cases = cases;
  uint64_t total[kBufferCount] = {0, 0, 0, 0};
  for (OpCase& c : set.cases) {
    Plan& plan = c.harness.plan;
    for (int b = 0; b < kBufferCount; ++b) {
      // 256-byte aligned, so every tensor keeps its offset's alignment (PlanHarness puts
      // weights 4 bytes past a 64-byte boundary on purpose).
      const uint64_t at = (total[b] + 255) / 256 * 256;
      set.base[b].push_back(at);
      set.size[b].push_back(plan.buffer_bytes[b]);
      total[b] = at + plan.buffer_bytes[b];
    }
    for (TensorRegion& t : plan.tensors) t.offset += set.base[static_cast<int>(t.buffer)].back();
  }
  for (int b = 0; b < kBufferCount; ++b) {
    set.bytes[b].assign(total[b] + 64, 0);
    for (size_t i = 0; i < cases.size(); ++i) {
      std::memcpy(set.bytes[b].data() + set.base[b][i], cases[i].harness.bytes[b].data(),
                  set.size[b][i]);
    }
  }
  for (OpCase& c : set.cases) {
    for (int b = 0; b < kBufferCount; ++b) c.harness.plan.buffer_bytes[b] = total[b];
    // The relocated harness keeps no bytes of its own: the set's are the ones.
    for (std::vector<uint8_t>& v : c.harness.bytes) v.clear();
  }
  return set;
}

namespace {

Status RunCase(Backend& backend, const CaseSet& set, size_t i, CaseOutput* out) {
  const int arena = static_cast<int>(BufferId::kArena), kv = static_cast<int>(BufferId::kKvCache);
  for (const CaseStep& s : set.cases[i].steps) {
    STATICLM_RETURN_IF_ERROR(backend.Execute(static_cast<int>(i), s.Params()));
    out->arena_after_step.emplace_back(set.size[arena][i], 0);
    STATICLM_RETURN_IF_ERROR(backend.ReadBuffer(BufferId::kArena, set.base[arena][i],
                                                set.size[arena][i],
                                                out->arena_after_step.back().data()));
  }
  out->cache.assign(set.size[kv][i], 0);
  return backend.ReadBuffer(BufferId::kKvCache, set.base[kv][i], set.size[kv][i],
                            out->cache.data());
}

}  // namespace

std::vector<CaseOutput> RunCaseSet(Backend& backend, const CaseSet& set, Status* prepare) {
  std::vector<uint8_t> bytes[kBufferCount];
  BufferBinding binding;
  for (int b = 0; b < kBufferCount; ++b) {
    bytes[b] = set.bytes[b];
    binding.data[b] = bytes[b].data();
    binding.bytes[b] = bytes[b].size() - 64;
  }
  std::vector<const Plan*> plans;
  for (const OpCase& c : set.cases) plans.push_back(&c.harness.plan);
  *prepare = backend.Prepare(plans.data(), static_cast<int>(plans.size()), binding);
  std::vector<CaseOutput> outputs;
  if (!prepare->ok()) return outputs;
  outputs.resize(set.cases.size());
  for (BufferId id : {BufferId::kKvCache, BufferId::kArena}) {
    const int b = static_cast<int>(id);
    const Status s = backend.WriteBuffer(id, 0, binding.bytes[b], set.bytes[b].data());
    if (!s.ok()) {
      for (CaseOutput& o : outputs) o.run = s;
      return outputs;
    }
  }
  for (size_t i = 0; i < set.cases.size(); ++i)
    outputs[i].run = RunCase(backend, set, i, &outputs[i]);
  return outputs;
}

std::vector<float> CaseValues(const CaseSet& set, size_t index, uint32_t tensor,
                              const std::vector<uint8_t>& region, int64_t rows) {
  const TensorRegion& t = set.cases[index].harness.plan.tensors[tensor];
  const int64_t n = rows < 0 ? t.elements() : rows * t.shape[1];
  const uint8_t* p = region.data() + (t.offset - set.base[static_cast<int>(t.buffer)][index]);
  return vktest::DecodeFloats(p, t.dtype, n);
}

}  // namespace staticlm::optest
