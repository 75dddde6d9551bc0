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
#include "tests/support/op_cases.h"
#include "tests/support/temp_path.h"

namespace staticlm::optest {
namespace {

using vktest::PlanHarness;
using vktest::RunResult;
using vktest::Values;

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
  // Every case prepares a new backend: a pipeline cache shared by the process's cases makes
  // each shader's pipeline once (lavapipe compiles them slowly, the more so under ASan).
  static const std::string pipeline_cache = test::TempPath("backend_ops.pipelines");
  std::snprintf(o.pipeline_cache_path, sizeof(o.pipeline_cache_path), "%s", pipeline_cache.c_str());
  return o;
}

struct CaseRun {
  Status prepare;
  Status run;
  RunResult result;  // RunResult::arena_after_step: the arena after each step
};

// Prepare, upload the case's cache and arena (through WriteBuffer, as a device keeps them),
// each step, read the buffers back.
CaseRun RunCase(Backend& backend, const OpCase& c) {
  CaseRun r;
  PlanHarness h = c.harness;  // the backend's own host memory
  const Plan* plans[1] = {&h.plan};
  r.prepare = backend.Prepare(plans, 1, h.Binding());
  if (!r.prepare.ok()) return r;
  for (BufferId id : {BufferId::kKvCache, BufferId::kArena}) {
    const int i = static_cast<int>(id);
    r.run = backend.WriteBuffer(id, 0, h.plan.buffer_bytes[i], c.harness.bytes[i].data());
    if (!r.run.ok()) return r;
  }
  const int arena = static_cast<int>(BufferId::kArena);
  for (const CaseStep& s : c.steps) {
    r.run = backend.Execute(0, s.Params());
    if (!r.run.ok()) return r;
    r.result.arena_after_step.emplace_back(h.plan.buffer_bytes[arena], 0);
    r.run = backend.ReadBuffer(BufferId::kArena, 0, h.plan.buffer_bytes[arena],
                               r.result.arena_after_step.back().data());
    if (!r.run.ok()) return r;
  }
  for (BufferId id : {BufferId::kKvCache, BufferId::kArena, BufferId::kIo}) {
    const int i = static_cast<int>(id);
    r.result.bytes[i].assign(h.plan.buffer_bytes[i], 0);
    r.run = backend.ReadBuffer(id, 0, h.plan.buffer_bytes[i], r.result.bytes[i].data());
    if (!r.run.ok()) return r;
  }
  return r;
}

// Each checked tensor of `c`: arena ones after every step, the others at the end.
void ExpectMatches(const OpCase& c, const RunResult& want, const RunResult& got) {
  const PlanHarness& h = c.harness;
  const int arena = static_cast<int>(BufferId::kArena);
  for (const CheckedTensor& check : c.checks) {
    const TensorRegion& t = h.plan.tensors[check.tensor];
    if (t.buffer != BufferId::kArena) {
      const double e = NormalisedMse(Values(h, want, check.tensor), Values(h, got, check.tensor));
      EXPECT_LE(e, check.max_nmse) << t.name << " (nmse)";
      continue;
    }
    for (size_t s = 0; s < c.steps.size(); ++s) {
      RunResult want_step, got_step;
      want_step.bytes[arena] = want.arena_after_step[s];
      got_step.bytes[arena] = got.arena_after_step[s];
      const int64_t rows = check.all_rows ? -1 : c.steps[s].n_tokens;
      const double e = NormalisedMse(Values(h, want_step, check.tensor, rows),
                                     Values(h, got_step, check.tensor, rows));
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

// Runs case `c` on the variant's backend and on the oracle and compares them; true when the
// backend ran it (false: refused, as listed).
bool RunAndCompare(const Variant& v, const OpCase& c) {
  std::unique_ptr<Backend> backend;
  EXPECT_TRUE(CreateBackend(v.backend, OptionsOf(v), &backend).ok());
  if (backend == nullptr) return false;
  const CaseRun got = RunCase(*backend, c);
  if (ListedUnsupported(v.backend, c.form)) {
    EXPECT_FALSE(got.prepare.ok()) << "listed unsupported, but prepared: remove it from the list";
    return false;
  }
  EXPECT_TRUE(got.prepare.ok()) << got.prepare.message();
  EXPECT_TRUE(got.run.ok()) << got.run.message();
  if (!got.prepare.ok() || !got.run.ok()) return true;
  BackendOptions oracle_options;
  oracle_options.reference_kernels = true;
  oracle_options.quantized_activations = v.quantized_activations;
  cpu::CpuBackend oracle(oracle_options);
  const CaseRun want = RunCase(oracle, c);
  EXPECT_TRUE(want.prepare.ok() && want.run.ok()) << want.prepare.message() << want.run.message();
  if (want.prepare.ok() && want.run.ok()) ExpectMatches(c, want.result, got.result);
  return true;
}

class BackendOpsTest : public ::testing::TestWithParam<Variant> {};

TEST_P(BackendOpsTest, EveryOpMatchesTheReference) {
  const Variant& v = GetParam();
  const Status probe = Probe(v);
  if (!probe.ok()) GTEST_SKIP() << v.label << " cannot run here: " << probe.message();
  int ran = 0, refused = 0;
  for (const OpCase& c : AllOpCases()) {
    if (v.quantized_activations != 0 && !c.quantizable) continue;
    SCOPED_TRACE(std::string(v.label) + ": " + c.name);
    if (RunAndCompare(v, c)) {
      ++ran;
    } else {
      ++refused;
    }
  }
  std::printf("%s (%s): %d cases run against the reference, %d listed unsupported\n", v.label,
              v.backend, ran, refused);
  EXPECT_GT(ran, 0);
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
