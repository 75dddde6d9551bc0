// The cases of the shared every-op backend test (tests/backend_ops_test.cpp): small plans of one
// op (or a few, where an op needs context: kKvStore before kAttention), their inputs filled from
// seeded RNGs, the steps to run them with and the tensors to compare against the reference CPU
// kernels, each with the normalised mean squared error it may reach. Sizes are awkward on
// purpose (rows 1, 3, 7, 13; widths that are not powers of two where the dtype allows).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "contract/plan.h"
#include "tests/vulkan_test_support.h"  // PlanHarness, RandomFloats, RandomWeights (generic)

namespace staticlm::optest {

// Largest normalised mean squared error each kind of op may show against the reference. A
// wrong index, row, head, slot or scale gives errors of order 1e-2 … 1, so these catch every
// real bug while leaving room for what backends legitimately do differently:
//  - kRounding: ops of one or two roundings per element (copies, dequantization by an f16
//    scale, adds, RoPE with the reference's angles, f16 stores): at most a few ulps (2^-23
//    relative) per element, NMSE ≤ ~1e-13.
constexpr double kRounding = 1e-12;
//  - kReduction: a row-wide sum (RMSNorm) or a transcendental (exp in SiLU, tanh in GELU) that a
//    backend may approximate or reassociate: ~1e-6 relative, NMSE ~1e-12; 100× headroom.
constexpr double kReduction = 1e-10;
//  - kProduct: dot products of up to 768 terms of mixed signs summed in another order (SIMD
//    lanes, tiles, subgroups, split softmax): relative error up to ~k · 2^-24 ≈ 5e-5 of the
//    terms' magnitude, NMSE ≲ 3e-9. Activations stay f32 (int8/int16 ones are compared with the
//    integer reference of the same width, which the fast integer kernels match bit for bit).
constexpr double kProduct = 1e-8;
//  - kAttentionQ8: the q8 cache's codes are x / scale rounded; a backend dividing or rounding
//    differently moves a code by one at rounding boundaries (≤ 0.5% of codes), each by 1/127 of
//    its row's largest value: NMSE of the attention output ≲ 0.005 · (3/127)² ≈ 3e-6.
constexpr double kAttentionQ8 = 1e-5;
//  - kAttentionQ4: the same for q4's 4-bit codes (steps of 1/15 of a group's range, ~6σ):
//    ≲ 0.005 · 0.4² ≈ 8e-4.
constexpr double kAttentionQ4 = 1e-3;

// One step of a case. The row arrays (rows_are_sequences plans) are owned here, so a StepParams
// made from a step borrows them for as long as the case lives.
struct CaseStep {
  CaseStep() = default;
  CaseStep(int32_t n, int32_t pos, int32_t seq = 0) : n_tokens(n), position(pos), sequence(seq) {}
  int32_t n_tokens = 0;
  int32_t position = 0;
  int32_t sequence = 0;
  std::vector<int32_t> row_sequences, row_positions;
  StepParams Params() const;
};

// A tensor compared after the run, every element: arena tensors after every step (rows past
// the step's must be left alone), cache tensors once at the end.
struct CheckedTensor {
  CheckedTensor(uint32_t t, double nmse) : tensor(t), max_nmse(nmse) {}
  uint32_t tensor = 0;
  double max_nmse = 0.0;
};

struct OpCase {
  std::string name;  // unique, e.g. "matmul Q4_K rows 7/13 k 768"
  // The op form, what the list of unsupported (backend, form) pairs names, e.g. "matmul Q5_1",
  // "embed Q6_K", "attention q4 sink".
  std::string form;
  bool quantizable = false;  // a product quantized_activations changes (cpu::IntSupportsType)
  vktest::PlanHarness harness{1};
  std::vector<CaseStep> steps;
  std::vector<CheckedTensor> checks;
};

// Every case, built and filled (deterministic: the same list on every call).
std::vector<OpCase> AllOpCases();

// The cases of kKvStore + kAttention (op_cases_attention.cpp), appended to *out.
void AddAttentionCases(std::vector<OpCase>* out);

// A new case of `chunk` rows, named, of op form `form` (see OpCase).
OpCase NewCase(const std::string& name, const std::string& form, int32_t chunk,
               int32_t max_context = 64);

// sum (got − want)² / sum want² (0 when both are all zeros; infinity when a value is not finite
// or the sizes differ): test-backend-ops' measure, scale-free, so one threshold serves an op.
double NormalisedMse(const std::vector<float>& want, const std::vector<float>& got);

}  // namespace staticlm::optest
