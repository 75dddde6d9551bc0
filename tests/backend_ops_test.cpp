// Every plan op of every backend against the plain reference CPU kernels (the oracle), the way
// llama.cpp's test-backend-ops checks its backends: each case of tests/support/op_cases.h (a
// one-op or few-op plan on seeded random inputs of awkward sizes) runs through the Backend
// interface (CreateBackend, Prepare, Execute, ReadBuffer) on the backend under test and on the
// CPU backend with reference_kernels, and each checked tensor's normalised mean squared error
// must stay under its op's threshold (op_cases.h says why each is what it is).
//
// A backend this build lacks, or one without a device or instruction set here (a one-op probe
// plan fails Prepare), skips with the reason. An op form a backend cannot run must be in
// kUnsupported below, where its Prepare failing is checked too (so the list cannot go stale);
// any other Prepare failure fails the test.
#include <cstdio>
#include <cstring>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/backend_registry.h"
#include "backends/cpu/cpu_backend.h"
#include "tests/support/op_case_set.h"
#include "tests/support/op_cases.h"

namespace staticlm::optest {
namespace {

using vktest::PlanHarness;

// A backend under test: a registry name and the options that select its kernels.
struct Variant {
  const char* label;
  const char* backend;
  const char* isa;  // CPU: BackendOptions::isa
  int quantized_activations;
};

const Variant kVariants[] = {
    {"cpu_scalar", "cpu", "scalar", 0},
    {"cpu_avx2", "cpu", "avx2", 0},
    {"cpu_avx512", "cpu", "avx512", 0},
    {"cpu_neon", "cpu", "neon", 0},
    // Integer activations: only the products they change run (OpCase::quantizable), against
    // the integer reference of the same width.
    {"cpu_int8", "cpu", "auto", 8},
    {"cpu_int16", "cpu", "auto", 16},
    {"vulkan", "vulkan", "auto", 0},
    {"cuda", "cuda", "auto", 0},
};

// The (backend, op form) pairs a backend refuses at Prepare, each with why. Their Prepare must
// fail; every other form must prepare and match the oracle.
struct Unsupported {
  const char* backend;
  const char* form;
};
// Empty today: Vulkan decodes every weight type the CPU does (vulkan_quant_weights_test.cpp)
// and runs every op form here. A backend that refuses one adds {"name", "form"} with the reason.
const std::vector<Unsupported> kUnsupported = {};

bool ListedUnsupported(const char* backend, const std::string& form) {
  for (const Unsupported& u : kUnsupported) {
    if (std::strcmp(u.backend, backend) == 0 && form == u.form) return true;
  }
  return false;
}

BackendOptions OptionsOf(const Variant& v) {
  BackendOptions o;
  std::snprintf(o.isa, sizeof(o.isa), "%s", v.isa);
  o.quantized_activations = v.quantized_activations;
  return o;
}

// Each checked tensor of case i: arena ones after every step, cache ones at the end.
void ExpectMatches(const CaseSet& set, size_t i, const CaseOutput& want, const CaseOutput& got) {
  const OpCase& c = set.cases[i];
  for (const CheckedTensor& check : c.checks) {
    const TensorRegion& t = c.harness.plan.tensors[check.tensor];
    if (t.buffer == BufferId::kKvCache) {
      const double e = NormalisedMse(CaseValues(set, i, check.tensor, want.cache),
                                     CaseValues(set, i, check.tensor, got.cache));
      EXPECT_LE(e, check.max_nmse) << t.name << " (nmse)";
      continue;
    }
    ASSERT_EQ(t.buffer, BufferId::kArena) << t.name;
    for (size_t s = 0; s < c.steps.size(); ++s) {
      // Every row: those past the step's must be left as they were, as the oracle leaves them.
      const double e = NormalisedMse(CaseValues(set, i, check.tensor, want.arena_after_step[s]),
                                     CaseValues(set, i, check.tensor, got.arena_after_step[s]));
      EXPECT_LE(e, check.max_nmse) << t.name << " after step " << s << " (nmse)";
    }
  }
}

// Whether the variant can run here: a one-op plan (an add) prepared; else why not.
Status Probe(const Variant& v) {
  std::unique_ptr<Backend> backend;
  Status s = CreateBackend(v.backend, OptionsOf(v), &backend);
  if (!s.ok()) return s;
  PlanHarness h(1);
  uint32_t a = h.Tensor(BufferId::kArena, DType::kF32, {1, 8}, "a");
  uint32_t b = h.Tensor(BufferId::kArena, DType::kF32, {1, 8}, "b");
  h.AddOp(OpKind::kAdd, {b}, {a}, OpParams{});
  h.Allocate();
  const Plan* plans[1] = {&h.plan};
  return backend->Prepare(plans, 1, h.Binding());
}

// Prepare's status for case `c` alone on the variant's backend.
Status PrepareAlone(const Variant& v, const OpCase& c) {
  std::unique_ptr<Backend> backend;
  Status s = CreateBackend(v.backend, OptionsOf(v), &backend);
  if (!s.ok()) return s;
  Status prepare;
  RunCaseSet(*backend, MergeCases({c}), &prepare);
  return prepare;
}

// The cases grouped by their form's first two words ("matmul Q4_K", "attention q8").
std::vector<std::vector<OpCase>> GroupCases(const std::vector<OpCase>& cases) {
  std::vector<std::string> keys;
  std::vector<std::vector<OpCase>> groups;
  for (const OpCase& c : cases) {
    const std::string key = c.form.substr(0, c.form.find(' ', c.form.find(' ') + 1));
    size_t g = 0;
    while (g < keys.size() && keys[g] != key) ++g;
    if (g == keys.size()) {
      keys.push_back(key);
      groups.emplace_back();
    }
    groups[g].push_back(c);
  }
  return groups;
}

// Runs a group of cases on one backend of the variant and on the oracle, compares every
// case; the number of cases compared.
size_t RunGroup(const Variant& v, const CaseSet& set) {
  std::unique_ptr<Backend> backend;
  EXPECT_TRUE(CreateBackend(v.backend, OptionsOf(v), &backend).ok());
  if (backend == nullptr) return 0;
  Status prepare;
  const std::vector<CaseOutput> got = RunCaseSet(*backend, set, &prepare);
  if (!prepare.ok()) {  // say which cases it refuses
    for (const OpCase& c : set.cases) {
      const Status alone = PrepareAlone(v, c);
      EXPECT_TRUE(alone.ok()) << c.name << ": " << alone.message();
    }
    ADD_FAILURE() << "Prepare of " << set.cases.size() << " cases: " << prepare.message();
    return 0;
  }
  BackendOptions oracle_options;
  oracle_options.reference_kernels = true;
  oracle_options.quantized_activations = v.quantized_activations;
  cpu::CpuBackend oracle(oracle_options);
  const std::vector<CaseOutput> want = RunCaseSet(oracle, set, &prepare);
  EXPECT_TRUE(prepare.ok()) << prepare.message();
  if (!prepare.ok()) return 0;
  for (size_t i = 0; i < set.cases.size(); ++i) {
    SCOPED_TRACE(std::string(v.label) + ": " + set.cases[i].name);
    EXPECT_TRUE(want[i].run.ok()) << want[i].run.message();
    EXPECT_TRUE(got[i].run.ok()) << got[i].run.message();
    if (want[i].run.ok() && got[i].run.ok()) ExpectMatches(set, i, want[i], got[i]);
  }
  return set.cases.size();
}

class BackendOpsTest : public ::testing::TestWithParam<Variant> {};

TEST_P(BackendOpsTest, EveryOpMatchesTheReference) {
  const Variant& v = GetParam();
  const Status probe = Probe(v);
  if (!probe.ok()) GTEST_SKIP() << v.label << " cannot run here: " << probe.message();
  std::vector<OpCase> runnable;
  int refused = 0;
  for (const OpCase& c : AllOpCases()) {
    if (v.quantized_activations != 0 && !c.quantizable) continue;
    if (!ListedUnsupported(v.backend, c.form)) {
      runnable.push_back(c);
      continue;
    }
    EXPECT_FALSE(PrepareAlone(v, c).ok())
        << c.name << ": listed unsupported, but prepared: remove it from the list";
    ++refused;
  }
  // One backend per group of cases (a device backend holds a bounded number of pipelines).
  size_t matched = 0;
  for (const std::vector<OpCase>& group : GroupCases(runnable)) {
    matched += RunGroup(v, MergeCases(group));
  }
  std::printf("%s (%s): %zu cases matched the reference, %d listed unsupported\n", v.label,
              v.backend, matched, refused);
  EXPECT_FALSE(runnable.empty());
}

// gtest prints the parameter by its label.
void PrintTo(const Variant& v, std::ostream* os) {
  *os << v.label;
}

INSTANTIATE_TEST_SUITE_P(Backends, BackendOpsTest, ::testing::ValuesIn(kVariants),
                         [](const ::testing::TestParamInfo<Variant>& info) {
                           return std::string(info.param.label);
                         });

}  // namespace
}  // namespace staticlm::optest
