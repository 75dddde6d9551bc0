// Sampling on the Vulkan device (backends/vulkan/vk_sampling.h, shaders/sample_*.comp).
//
// Kernels: the greedy and top-k shaders against the host Sampler (the oracle) on logits rows
// of awkward sizes — vocabularies that are not multiples of the workgroup, many ties (the k-th
// key inside a run of equal logits), −inf entries, ±0, k = 1 and k up to the vocabulary's and
// the shader's limits, a 262144-token row — with the Khronos validation layer on (any message
// fails). The logits reach the device io buffer through an embedding lookup of an f32 table
// (exact), so each step's rows are chosen table rows. Random draws are compared with the host
// Sampler's pick; a u within 3e-5 of an edge of the cumulative weights (the device sums in
// float, the host in double) is a rounding case and only counted, and must stay rare. Every
// candidate is also hit by a u at the middle of its interval (computed here in double), so the
// order and the weights are checked exactly.
//
// Engine (the real model, through the C API): greedy generation with device sampling equals
// the CPU backend token for token (the parity tests' near-tie rule stops the comparison);
// seeded top-k equals the host Sampler given the logits fetched after each device sample, and
// the same generation with device sampling off; the logits fetched after a device sample are
// the step's; and only the token id (4 bytes) is read back per sampled step, by the backend's
// own count of bytes copied to the host.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/capi/capi_context.h"
#include "runtime/sampler/sampler.h"
#include "staticlm/staticlm.h"
#include "tests/support/context_helpers.h"
#include "tests/support/sampling_reference.h"
#include "tests/support/sanitizer_build.h"
#include "tests/vulkan_test_support.h"
#if defined(STATICLM_HAVE_VULKAN)
#include "backends/vulkan/vulkan_backend.h"
#endif

namespace staticlm::vktest {
namespace {

#if defined(STATICLM_HAVE_VULKAN)

constexpr float kInf = std::numeric_limits<float>::infinity();
using test::FilteredInDouble;
using test::HostFiltered;
using test::NearBoundary;

// A plan whose step writes `rows` logits rows of `vocab` into the io buffer: row r is row
// tokens[r] of an f32 table (the embedding lookup copies it exactly).
struct LogitsRig {
  PlanHarness h;
  uint32_t table = 0, logits = 0;
  int32_t vocab = 0, rows = 0;
  std::unique_ptr<vulkan::VulkanBackend> vk;
  bool skipped = false;

  LogitsRig(const std::vector<std::vector<float>>& table_rows, int32_t n_rows)
      : h(n_rows), vocab(int32_t(table_rows[0].size())), rows(n_rows) {
    const int64_t n = int64_t(table_rows.size());
    table = h.Tensor(BufferId::kWeights, DType::kF32, {n, vocab}, "table");
    logits = h.Tensor(BufferId::kIo, DType::kF32, {n_rows, vocab}, "logits");
    h.plan.logits_tensor = logits;
    h.AddOp(OpKind::kEmbed, {table, h.plan.tokens_tensor}, {logits}, OpParams{});
    h.Allocate();
    for (size_t i = 0; i < table_rows.size(); ++i) {
      std::memcpy(h.Data(table) + i * size_t(vocab) * 4, table_rows[i].data(), size_t(vocab) * 4);
    }
    BackendOptions options;
    options.logits_on_request = true;
    vulkan::VulkanTestOptions test;
    test.validation = true;
    vk = std::make_unique<vulkan::VulkanBackend>(options, test);
    const Plan* plans[1] = {&h.plan};
    Status s = vk->Prepare(plans, 1, h.Binding());
    if (!s.ok() && std::strstr(s.message(), "no Vulkan") != nullptr) {
      skipped = true;
      return;
    }
    EXPECT_TRUE(s.ok()) << s.message();
  }

  // Runs one step whose row r is table row `which[r]`.
  void Step(const std::vector<int32_t>& which) {
    std::memcpy(h.Data(h.plan.tokens_tensor), which.data(), which.size() * 4);
    Status s = vk->Execute(0, {int32_t(which.size()), 0});
    ASSERT_TRUE(s.ok()) << s.message();
  }
};

struct Tally {
  int compared = 0, boundary = 0;
};

// Top-k with temperature, top-p and min-p of row `row` (table row `logits`) on the device
// against the host Sampler: 12 random draws (the host Sampler draws u from its generator,
// seeded from `draws`, its first draw peeked, and the device is given the same u), then the
// middle of each kept candidate's interval of the cumulative weights, which picks exactly that
// candidate (intervals too narrow to hit away from float rounding are left out). Draws within
// rounding of a boundary, and rows whose kept set rounding could change, are only counted.
void CheckFiltered(LogitsRig& rig, int32_t row, const std::vector<float>& logits,
                   const DeviceSampling& d, std::mt19937_64& draws, Tally* tally) {
  SCOPED_TRACE("k " + std::to_string(d.top_k) + " temperature " + std::to_string(d.temperature) +
               " top_p " + std::to_string(d.top_p) + " min_p " + std::to_string(d.min_p));
  Sampler host;
  ASSERT_TRUE(host.Init(rig.vocab).ok());
  SamplerParams p;
  p.temperature = d.temperature;
  p.top_k = d.top_k;
  p.top_p = d.top_p;
  p.min_p = d.min_p;
  const HostFiltered ref = FilteredInDouble(logits, d.top_k, d.temperature, d.top_p, d.min_p);
  const double total = ref.kept.cumulative.back();
  for (int i = 0; i < 12; ++i) {
    Rng rng(draws());
    Rng peek = rng;
    DeviceSampling draw = d;
    draw.uniform = peek.NextUnit();
    host.rng() = rng;
    int32_t host_token = -1, device_token = -1;
    ASSERT_TRUE(host.Sample(logits.data(), nullptr, 0, p, &host_token).ok());
    ASSERT_TRUE(rig.vk->SampleOnDevice(0, row, draw, &device_token).ok());
    ++tally->compared;
    if (NearBoundary(ref, draw.uniform)) {
      ++tally->boundary;
      continue;
    }
    EXPECT_EQ(device_token, host_token) << "u " << draw.uniform;
  }
  if (ref.ambiguous) return;
  for (size_t j = 0; j < ref.kept.order.size(); ++j) {
    const double lo = j == 0 ? 0.0 : ref.kept.cumulative[j - 1];
    if (ref.kept.cumulative[j] - lo < 1e-4 * total) continue;
    DeviceSampling middle = d;
    middle.uniform = (lo + ref.kept.cumulative[j]) / 2 / total;
    int32_t device_token = -1;
    ASSERT_TRUE(rig.vk->SampleOnDevice(0, row, middle, &device_token).ok());
    EXPECT_EQ(device_token, ref.kept.order[j]) << "candidate " << j << " of " << d.top_k;
  }
}

// Greedy and top-k of row `row` (table row `logits`) on the device against the host Sampler.
void CheckRow(LogitsRig& rig, int32_t row, const std::vector<float>& logits,
              const std::vector<int32_t>& ks, const std::vector<float>& temperatures,
              Tally* tally) {
  Sampler host;
  ASSERT_TRUE(host.Init(rig.vocab).ok());
  SamplerParams greedy;
  greedy.temperature = 0.0f;
  int32_t want = -1, got = -1;
  ASSERT_TRUE(host.Sample(logits.data(), nullptr, 0, greedy, &want).ok());
  const uint64_t before = rig.vk->bytes_read_back();
  Status s = rig.vk->SampleOnDevice(0, row, DeviceSampling{}, &got);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(rig.vk->bytes_read_back() - before, sizeof(int32_t)) << "only the token id";
  EXPECT_EQ(got, want) << "greedy, row " << row;
  std::mt19937_64 draws(uint64_t(row) * 7919 + uint64_t(rig.vocab));
  for (int32_t k : ks) {
    for (float t : temperatures) {
      DeviceSampling d;
      d.top_k = k;
      d.temperature = t;
      CheckFiltered(rig, row, logits, d, draws, tally);
    }
  }
}

std::vector<float> Normal(size_t n, uint32_t seed, float scale) {
  return RandomFloats(n, seed, scale);
}

#define RIG_OR_SKIP(rig)                                 \
  if ((rig).skipped) GTEST_SKIP() << "no Vulkan device"; \
  ASSERT_EQ((rig).vk->validation_messages(), 0u);        \
  ASSERT_GT((rig).vk->max_device_top_k(), 0)

TEST(VulkanSamplingKernelTest, RandomRowsAwkwardSizes) {
  for (int32_t vocab : {1000, 257, 4099}) {
    SCOPED_TRACE("vocab " + std::to_string(vocab));
    std::vector<std::vector<float>> table = {Normal(size_t(vocab), 1, 3.0f),
                                             Normal(size_t(vocab), 2, 0.5f),
                                             Normal(size_t(vocab), 3, 8.0f)};
    LogitsRig rig(table, 3);
    RIG_OR_SKIP(rig);
    rig.Step({2, 0, 1});
    Tally tally;
    const std::vector<int32_t> ks = {1, 2, 40, std::min(256, vocab - 1)};
    CheckRow(rig, 0, table[2], ks, {0.7f, 1.0f, 2.5f}, &tally);
    CheckRow(rig, 1, table[0], ks, {1.0f}, &tally);
    CheckRow(rig, 2, table[1], ks, {0.3f}, &tally);
    std::printf("vocab %d: %d random top-k draws compared, %d near a boundary\n", vocab,
                tally.compared, tally.boundary);
    EXPECT_LE(tally.boundary * 10, tally.compared) << "boundary cases should be rare";
    EXPECT_EQ(rig.vk->validation_messages(), 0u);
  }
}

// Few distinct values: the k-th key falls inside a run of equal logits, whose lower ids win;
// −0 and +0 are equal; the argmax is tied between ids.
TEST(VulkanSamplingKernelTest, TiesGoToLowerIds) {
  const int32_t vocab = 777;
  std::vector<float> coarse = Normal(size_t(vocab), 4, 1.5f);
  for (float& v : coarse) v = std::round(v * 2.0f) / 2.0f;
  std::vector<float> zeros(size_t(vocab), 0.0f);
  for (int32_t i = 0; i < vocab; i += 3) zeros[size_t(i)] = -0.0f;
  zeros[0] = -0.0f;
  std::vector<float> tied_max = Normal(size_t(vocab), 5, 1.0f);
  tied_max[600] = tied_max[5] = 9.0f;
  LogitsRig rig({coarse, zeros, tied_max}, 3);
  RIG_OR_SKIP(rig);
  rig.Step({0, 1, 2});
  Tally tally;
  CheckRow(rig, 0, coarse, {1, 3, 17, 100, 256}, {1.0f, 0.5f}, &tally);
  CheckRow(rig, 1, zeros, {1, 5, 256}, {1.0f}, &tally);
  CheckRow(rig, 2, tied_max, {1, 2, 64}, {1.0f}, &tally);
  int32_t token = -1;
  ASSERT_TRUE(rig.vk->SampleOnDevice(0, 1, DeviceSampling{}, &token).ok());
  EXPECT_EQ(token, 0) << "-0 and +0 tie: the lowest id";
  ASSERT_TRUE(rig.vk->SampleOnDevice(0, 2, DeviceSampling{}, &token).ok());
  EXPECT_EQ(token, 5);
  EXPECT_LE(tally.boundary * 10, tally.compared);
  EXPECT_EQ(rig.vk->validation_messages(), 0u);
}

// Mostly −inf: fewer finite logits than k, so −inf candidates (weight 0) fill the list and are
// never picked; and a row whose only finite logit is the last id.
TEST(VulkanSamplingKernelTest, NegativeInfinityEntries) {
  const int32_t vocab = 513;
  std::vector<float> sparse = Normal(size_t(vocab), 6, 2.0f);
  for (int32_t i = 0; i < vocab; ++i) {
    if (i % 5 != 2) sparse[size_t(i)] = -kInf;
  }
  std::vector<float> last(size_t(vocab), -kInf);
  last[size_t(vocab - 1)] = -3.0f;
  LogitsRig rig({sparse, last}, 2);
  RIG_OR_SKIP(rig);
  rig.Step({0, 1});
  Tally tally;
  CheckRow(rig, 0, sparse, {1, 50, 200, 256}, {1.0f, 4.0f}, &tally);
  CheckRow(rig, 1, last, {1, 8, 256}, {1.0f}, &tally);
  EXPECT_LE(tally.boundary * 10, tally.compared);
  EXPECT_EQ(rig.vk->validation_messages(), 0u);
}

// The largest vocabulary the shaders are sized for, and SmolLM2's plus an odd remainder.
TEST(VulkanSamplingKernelTest, LargeVocabularies) {
  for (int32_t vocab : {262144, 49152 + 3}) {
    SCOPED_TRACE("vocab " + std::to_string(vocab));
    std::vector<float> row = Normal(size_t(vocab), 7, 4.0f);
    LogitsRig rig({row}, 1);
    RIG_OR_SKIP(rig);
    rig.Step({0});
    Tally tally;
    CheckRow(rig, 0, row, {1, 64, 256}, {1.0f}, &tally);
    EXPECT_LE(tally.boundary * 10, tally.compared);
    EXPECT_EQ(rig.vk->validation_messages(), 0u);
  }
}

// Top-p and min-p after top-k against the host Sampler: many draws over rows of awkward sizes,
// coarse logits (ties, also at the top-p and min-p edges), p close to 0 and to 1, min_p from
// small to 1 (only the candidates tied with the best).
TEST(VulkanSamplingKernelTest, TopPAndMinPAreTheHostSamplers) {
  struct Filter {
    float top_p, min_p;
  };
  const Filter filters[] = {{1e-6f, 0.0f}, {0.3f, 0.0f}, {0.9f, 0.0f},   {0.999999f, 0.0f},
                            {1.0f, 0.05f}, {1.0f, 0.6f}, {0.95f, 0.05f}, {0.5f, 1.0f}};
  for (int32_t vocab : {257, 1000, 4099}) {
    SCOPED_TRACE("vocab " + std::to_string(vocab));
    std::vector<float> coarse = Normal(size_t(vocab), 11, 1.5f);
    for (float& v : coarse) v = std::round(v * 2.0f) / 2.0f;
    std::vector<std::vector<float>> table = {Normal(size_t(vocab), 12, 3.0f),
                                             Normal(size_t(vocab), 13, 0.5f), coarse};
    LogitsRig rig(table, 3);
    RIG_OR_SKIP(rig);
    rig.Step({0, 1, 2});
    Tally tally;
    std::mt19937_64 draws{uint64_t(vocab)};
    for (int32_t row = 0; row < 3; ++row) {
      for (int32_t k : {1, 2, 40, std::min(256, vocab - 1)}) {
        for (const Filter& f : filters) {
          DeviceSampling d;
          d.top_k = k;
          d.temperature = row == 1 ? 0.6f : 1.2f;
          d.top_p = f.top_p;
          d.min_p = f.min_p;
          CheckFiltered(rig, row, table[size_t(row)], d, draws, &tally);
        }
      }
    }
    std::printf("vocab %d: %d random top-p/min-p draws compared, %d near a boundary\n", vocab,
                tally.compared, tally.boundary);
    EXPECT_LE(tally.boundary * 10, tally.compared) << "boundary cases should be rare";
    EXPECT_EQ(rig.vk->validation_messages(), 0u);
  }
}

// Edges with exact weights (1 for the eight logits tied at the best, whose sums are exact in
// float and double): top-p keeps the shortest prefix whose weight reaches p — reaching it
// exactly is enough —, p close to 0 keeps only the best, p close to 1 all k; min_p 1 keeps only
// the candidates tied with the best. The host Sampler and the device must both give the
// expected token.
TEST(VulkanSamplingKernelTest, TopPAndMinPEdgesAreExact) {
  const int32_t vocab = 600;
  std::vector<float> row(size_t(vocab), 1.0f);
  const int32_t best[8] = {3, 50, 51, 99, 200, 201, 202, 599};
  for (int32_t id : best) row[size_t(id)] = 2.0f;
  LogitsRig rig({row}, 1);
  RIG_OR_SKIP(rig);
  rig.Step({0});
  struct Case {
    int32_t k;
    float top_p, min_p;
    double u;
    int32_t want;
  };
  const Case cases[] = {
      {8, 0.5f, 0.0f, 0.0, 3},           {8, 0.5f, 0.0f, 0.3, 50},
      {8, 0.5f, 0.0f, 0.99, 99},          // limit 4 reached exactly by four: the fifth is out
      {8, 0.50001f, 0.0f, 0.99, 200},     // just above: five
      {8, 1e-7f, 0.0f, 0.99, 3},          // the best alone
      {8, 0.99999994f, 0.0f, 0.99, 599},  // the largest float below 1: all eight
      {40, 1.0f, 1.0f, 0.5, 200},        {40, 1.0f, 1.0f, 0.99, 599},
      {40, 1.0f, 0.5f, 0.99, 599},  // e^-1 < 0.5: the ties with the best alone
      {40, 1.0f, 0.3f, 0.99, 32},   // e^-1 ≥ 0.3: all 40, the last the 32nd id at 1.0
  };
  Sampler host;
  ASSERT_TRUE(host.Init(vocab).ok());
  for (const Case& c : cases) {
    SCOPED_TRACE("k " + std::to_string(c.k) + " top_p " + std::to_string(c.top_p) + " min_p " +
                 std::to_string(c.min_p) + " u " + std::to_string(c.u));
    DeviceSampling d;
    d.top_k = c.k;
    d.top_p = c.top_p;
    d.min_p = c.min_p;
    d.uniform = c.u;
    int32_t token = -1;
    ASSERT_TRUE(rig.vk->SampleOnDevice(0, 0, d, &token).ok());
    EXPECT_EQ(token, c.want) << "device";
    // The host Sampler agrees exactly, draw for draw, on these edges (no rounding allowance).
    SamplerParams p;
    p.temperature = 1.0f;
    p.top_k = c.k;
    p.top_p = c.top_p;
    p.min_p = c.min_p;
    for (uint64_t seed = 0; seed < 64; ++seed) {
      host.Seed(seed);
      int32_t host_token = -1, device_token = -1;
      ASSERT_TRUE(host.Sample(row.data(), nullptr, 0, p, &host_token).ok());
      d.uniform = Rng(seed).NextUnit();
      ASSERT_TRUE(rig.vk->SampleOnDevice(0, 0, d, &device_token).ok());
      EXPECT_EQ(device_token, host_token) << "seed " << seed;
    }
  }
  EXPECT_EQ(rig.vk->validation_messages(), 0u);
}

// What the host Sampler rejects, the device rejects with the same status and message; bad
// requests fail cleanly.
TEST(VulkanSamplingKernelTest, BadLogitsAndRequestsFailLikeTheHost) {
  const int32_t vocab = 300;
  std::vector<float> nan_row = Normal(size_t(vocab), 8, 1.0f), inf_row = nan_row;
  nan_row[123] = std::numeric_limits<float>::quiet_NaN();
  inf_row[299] = kInf;
  std::vector<float> all_neg(size_t(vocab), -kInf);
  LogitsRig rig({nan_row, inf_row, all_neg}, 3);
  RIG_OR_SKIP(rig);
  rig.Step({0, 1, 2});
  Sampler host;
  ASSERT_TRUE(host.Init(vocab).ok());
  const std::vector<float>* rows[3] = {&nan_row, &inf_row, &all_neg};
  for (int32_t r = 0; r < 3; ++r) {
    for (int32_t k : {0, 10}) {
      SamplerParams p;
      p.temperature = k == 0 ? 0.0f : 1.0f;
      p.top_k = k;
      p.top_p = 1.0f;
      p.min_p = 0.0f;
      int32_t token = -1;
      Status want = host.Sample(rows[r]->data(), nullptr, 0, p, &token);
      DeviceSampling d;
      d.top_k = k;
      d.uniform = 0.5;
      Status got = rig.vk->SampleOnDevice(0, r, d, &token);
      ASSERT_FALSE(want.ok());
      EXPECT_EQ(got.code(), want.code()) << "row " << r << " k " << k;
      EXPECT_STREQ(got.message(), want.message()) << "row " << r << " k " << k;
    }
  }
  int32_t token = -1;
  EXPECT_EQ(rig.vk->SampleOnDevice(0, 3, DeviceSampling{}, &token).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(rig.vk->SampleOnDevice(1, 0, DeviceSampling{}, &token).code(),
            StatusCode::kInvalidArgument);
  DeviceSampling too_many;
  too_many.top_k = 257;
  EXPECT_EQ(rig.vk->SampleOnDevice(0, 0, too_many, &token).code(), StatusCode::kInvalidArgument);
  DeviceSampling bad_u;
  bad_u.top_k = 4;
  bad_u.uniform = 1.0;
  EXPECT_EQ(rig.vk->SampleOnDevice(0, 0, bad_u, &token).code(), StatusCode::kInvalidArgument);
  // Top-p and min-p outside their ranges, or without a top-k below the vocabulary (the host
  // sampler then measures top-p against the whole vocabulary).
  DeviceSampling bad_filters[4];
  for (DeviceSampling& d : bad_filters) d.top_k = 4;
  bad_filters[0].top_p = 0.0f;
  bad_filters[1].min_p = 1.5f;
  bad_filters[2].top_p = std::numeric_limits<float>::quiet_NaN();
  bad_filters[3].top_k = vocab;
  bad_filters[3].top_p = 0.9f;
  for (const DeviceSampling& d : bad_filters) {
    EXPECT_EQ(rig.vk->SampleOnDevice(0, 0, d, &token).code(), StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(rig.vk->validation_messages(), 0u);
}

// With logits_on_request, Execute copies nothing back; FetchLogits copies exactly the rows
// asked for, and they are the step's.
TEST(VulkanSamplingKernelTest, LogitsStayOnTheDeviceUntilFetched) {
  const int32_t vocab = 1000;
  std::vector<float> a = Normal(size_t(vocab), 9, 1.0f), b = Normal(size_t(vocab), 10, 1.0f);
  LogitsRig rig({a, b}, 2);
  RIG_OR_SKIP(rig);
  EXPECT_TRUE(rig.vk->logits_stay_on_device());
  uint64_t before = rig.vk->bytes_read_back();
  rig.Step({1, 0});
  EXPECT_EQ(rig.vk->bytes_read_back(), before) << "Execute read logits back";
  float* host_row1 = reinterpret_cast<float*>(rig.h.Data(rig.logits)) + vocab;
  ASSERT_TRUE(rig.vk->FetchLogits(0, 1, 1).ok());
  EXPECT_EQ(rig.vk->bytes_read_back() - before, uint64_t(vocab) * 4);
  EXPECT_EQ(std::memcmp(host_row1, a.data(), size_t(vocab) * 4), 0);
  EXPECT_EQ(rig.vk->FetchLogits(0, 1, 2).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(rig.vk->validation_messages(), 0u);
}

// ---- Engine level: the real model through the C API ----

using Context = staticlm::test::ContextPtr;

Context Create(const char* backend, std::string* error, int32_t snapshots = 0, int32_t batch = 1) {
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.max_snapshots = snapshots;
  limits.max_batch = batch;
  limits.max_context = 128;
  limits.prefill_chunk = 16;
  limits.backend = backend;
  return staticlm::test::TryCreateContext(STATICLM_DEFAULT_MODEL, limits, error);
}

vulkan::VulkanBackend* VulkanOf(staticlm_context* ctx) {
  return dynamic_cast<vulkan::VulkanBackend*>(ctx->engine.backend());
}

std::vector<int32_t> Prompt(staticlm_context* ctx) {
  const char* text = "The three primary colours are red, yellow and";
  std::vector<int32_t> tokens(64);
  size_t n = 0;
  EXPECT_EQ(staticlm_tokenize(ctx, text, std::strlen(text), 0, tokens.data(), tokens.size(), &n),
            STATICLM_OK);
  tokens.resize(n);
  return tokens;
}

std::vector<float> LogitsOf(staticlm_context* ctx) {
  const float* l = staticlm_logits(ctx);
  EXPECT_NE(l, nullptr);
  if (l == nullptr) return {};
  return std::vector<float>(l, l + ctx->engine.config().vocab_size);
}

using test::HaveDefaultModel;

staticlm_sampler GreedySampler() {
  staticlm_sampler greedy;
  staticlm_sampler_default(&greedy);
  greedy.temperature = 0.0f;
  return greedy;
}

// A CPU-backend context, it and `gpu` prefilled with the same prompt (null, with a failure
// recorded, when that cannot be done).
Context CpuPrefilledBeside(staticlm_context* gpu) {
  std::string error;
  Context cpu = Create("cpu", &error);
  EXPECT_NE(cpu, nullptr) << error;
  if (cpu == nullptr) return cpu;
  std::vector<int32_t> prompt = Prompt(cpu.get());
  EXPECT_EQ(staticlm_prefill(cpu.get(), prompt.data(), prompt.size()), STATICLM_OK);
  EXPECT_EQ(staticlm_prefill(gpu, prompt.data(), prompt.size()), STATICLM_OK);
  return cpu;
}

#define VULKAN_CONTEXT_OR_SKIP(var)                                                  \
  if (!HaveDefaultModel()) GTEST_SKIP() << "no model at " << STATICLM_DEFAULT_MODEL; \
  std::string error_##var;                                                           \
  Context var = Create("vulkan", &error_##var);                                      \
  if (var == nullptr && error_##var.find("no Vulkan") != std::string::npos) {        \
    GTEST_SKIP() << "no usable Vulkan device: " << error_##var;                      \
  }                                                                                  \
  ASSERT_NE(var, nullptr) << error_##var;                                            \
  ASSERT_NE(VulkanOf(var.get()), nullptr)

TEST(VulkanSamplingEngineTest, GreedyOnDeviceMatchesCpuAndReadsBackOnlyTokenIds) {
  VULKAN_CONTEXT_OR_SKIP(gpu);
  Context cpu = CpuPrefilledBeside(gpu.get());
  ASSERT_NE(cpu, nullptr);
  if (HasFailure()) return;
  const staticlm_sampler greedy = GreedySampler();
  vulkan::VulkanBackend* vk = VulkanOf(gpu.get());
  int matched = 0;
  for (int step = 0; step < 16; ++step) {
    int32_t want = -1, got = -1;
    ASSERT_EQ(staticlm_sample(cpu.get(), &greedy, &want), STATICLM_OK);
    const uint64_t before = vk->bytes_read_back();
    ASSERT_EQ(staticlm_sample(gpu.get(), &greedy, &got), STATICLM_OK);
    EXPECT_EQ(vk->bytes_read_back() - before, sizeof(int32_t)) << "step " << step;
    if (got != want) {
      std::vector<float> l = LogitsOf(cpu.get());
      std::partial_sort(l.begin(), l.begin() + 2, l.end(), std::greater<float>());
      ASSERT_LT(l[0] - l[1], 0.1f) << "step " << step << ": cpu " << want << ", vulkan " << got;
      std::printf("near tie at step %d; comparison stops\n", step);
      break;
    }
    ++matched;
    const uint64_t before_step = vk->bytes_read_back();
    ASSERT_EQ(staticlm_decode(cpu.get(), want), STATICLM_OK);
    ASSERT_EQ(staticlm_decode(gpu.get(), got), STATICLM_OK);
    EXPECT_EQ(vk->bytes_read_back(), before_step) << "a decode step read logits back";
  }
  std::printf("%d greedy tokens sampled on the device matched the CPU backend\n", matched);
  EXPECT_GE(matched, 8);
}

// The logits fetched after a device sample are the step's: the device's greedy token is their
// argmax, they agree with the CPU backend's within the parity bound, and fetching twice gives
// the same bytes (and reads them back once).
TEST(VulkanSamplingEngineTest, LogitsAreCorrectWhenFetchedAfterADeviceSample) {
  VULKAN_CONTEXT_OR_SKIP(gpu);
  Context cpu = CpuPrefilledBeside(gpu.get());
  ASSERT_NE(cpu, nullptr);
  if (HasFailure()) return;
  const staticlm_sampler greedy = GreedySampler();
  vulkan::VulkanBackend* vk = VulkanOf(gpu.get());
  for (int step = 0; step < 3; ++step) {
    int32_t token = -1;
    ASSERT_EQ(staticlm_sample(gpu.get(), &greedy, &token), STATICLM_OK);
    const uint64_t before = vk->bytes_read_back();
    std::vector<float> got = LogitsOf(gpu.get());
    const uint64_t vocab_bytes = got.size() * sizeof(float);
    EXPECT_EQ(vk->bytes_read_back() - before, vocab_bytes);
    std::vector<float> again = LogitsOf(gpu.get());
    EXPECT_EQ(vk->bytes_read_back() - before, vocab_bytes) << "fetched twice";
    EXPECT_EQ(std::memcmp(got.data(), again.data(), vocab_bytes), 0);
    EXPECT_EQ(int32_t(std::max_element(got.begin(), got.end()) - got.begin()), token);
    std::vector<float> want = LogitsOf(cpu.get());
    float worst = 0.0f;
    for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::fabs(want[i] - got[i]));
    EXPECT_LT(worst, 0.1f) << "step " << step;
    ASSERT_EQ(staticlm_decode(cpu.get(), token), STATICLM_OK);
    ASSERT_EQ(staticlm_decode(gpu.get(), token), STATICLM_OK);
  }
}

// Seeded sampling with `sampler` (top-k, maybe top-p and min-p) on the device against the host
// Sampler fed the same logits (fetched after each device sample) from a generator seeded alike
// — which also checks that the engine draws from the sequence's generator exactly as the host
// sampler does — and against the same engine with device sampling off, decoding the device's
// tokens. A step whose draw or filters are within rounding of a boundary is not compared, and
// such steps must be rare. The sanitizer build samples 8 steps instead of 16: each step takes
// the same host path, and the model's decode steps on lavapipe are most of the time there.
void CheckSeededAgainstTheHostSampler(const staticlm_sampler& sampler) {
  VULKAN_CONTEXT_OR_SKIP(gpu);
  vulkan::VulkanBackend* vk = VulkanOf(gpu.get());
  const uint64_t seed = 1234;
  constexpr int kSteps = staticlm::test::kSanitizerBuild ? 8 : 16;
  SamplerParams params = capi::ToSamplerParams(sampler);
  const int32_t vocab = gpu->engine.config().vocab_size;
  Sampler host;
  ASSERT_TRUE(host.Init(vocab).ok());
  host.Seed(seed);
  std::vector<int32_t> prompt = Prompt(gpu.get());

  staticlm_seed(gpu.get(), seed);
  ASSERT_EQ(staticlm_prefill(gpu.get(), prompt.data(), prompt.size()), STATICLM_OK);
  std::vector<int32_t> device_tokens;
  std::vector<bool> boundary;
  int not_argmax = 0;
  for (int step = 0; step < kSteps; ++step) {
    Rng peek = host.rng();
    const double u = peek.NextUnit();
    int32_t token = -1, want = -1;
    const uint64_t before = vk->bytes_read_back();
    ASSERT_EQ(staticlm_sample(gpu.get(), &sampler, &token), STATICLM_OK);
    EXPECT_EQ(vk->bytes_read_back() - before, sizeof(int32_t)) << "sampled on the host?";
    std::vector<float> logits = LogitsOf(gpu.get());
    ASSERT_TRUE(host.Sample(logits.data(), nullptr, 0, params, &want).ok());
    boundary.push_back(NearBoundary(
        FilteredInDouble(logits, params.top_k, params.temperature, params.top_p, params.min_p), u));
    if (boundary.back()) {
      std::printf("step %d: u or the filters within rounding of a boundary; not compared\n", step);
    } else {
      EXPECT_EQ(token, want) << "step " << step << " u " << u;
    }
    not_argmax += token != int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
    device_tokens.push_back(token);
    ASSERT_EQ(staticlm_decode(gpu.get(), token), STATICLM_OK);
  }
  const int n_boundary = int(std::count(boundary.begin(), boundary.end(), true));
  std::printf("%d tokens equal to the host sampler's (%d not the argmax), %d near a boundary\n",
              kSteps - n_boundary, not_argmax, n_boundary);
  EXPECT_LE(n_boundary, 2) << "boundary cases should be rare";

  // The same generation with every token sampled on the host.
  gpu->engine.set_device_sampling(false);
  staticlm_reset(gpu.get());
  staticlm_seed(gpu.get(), seed);
  ASSERT_EQ(staticlm_prefill(gpu.get(), prompt.data(), prompt.size()), STATICLM_OK);
  for (int step = 0; step < kSteps; ++step) {
    int32_t token = -1;
    const uint64_t before = vk->bytes_read_back();
    ASSERT_EQ(staticlm_sample(gpu.get(), &sampler, &token), STATICLM_OK);
    EXPECT_EQ(vk->bytes_read_back() - before, uint64_t(vocab) * sizeof(float));
    if (!boundary[size_t(step)]) {
      EXPECT_EQ(token, device_tokens[size_t(step)]) << "step " << step;
    }
    ASSERT_EQ(staticlm_decode(gpu.get(), device_tokens[size_t(step)]), STATICLM_OK);
  }
}

TEST(VulkanSamplingEngineTest, SeededTopKMatchesTheHostSampler) {
  staticlm_sampler topk;
  staticlm_sampler_default(&topk);
  topk.temperature = 1.3f;
  topk.top_k = 40;
  topk.top_p = 1.0f;
  topk.min_p = 0.0f;
  CheckSeededAgainstTheHostSampler(topk);
}

// The default sampler (top-k 40, top-p 0.95, min-p 0.05) and a narrower nucleus at a higher
// temperature are sampled on the device too.
TEST(VulkanSamplingEngineTest, SeededTopPAndMinPMatchTheHostSampler) {
  staticlm_sampler defaults;
  staticlm_sampler_default(&defaults);
  ASSERT_GT(defaults.top_k, 0);
  ASSERT_LT(defaults.top_p, 1.0f);
  ASSERT_GT(defaults.min_p, 0.0f);
  CheckSeededAgainstTheHostSampler(defaults);
  staticlm_sampler nucleus = defaults;
  nucleus.temperature = 1.6f;
  nucleus.top_k = 200;
  nucleus.top_p = 0.7f;
  nucleus.min_p = 0.02f;
  CheckSeededAgainstTheHostSampler(nucleus);
}

// A snapshot taken while the logits were still on the device holds the right ones, and after a
// restore the token is chosen from the restored logits (in host memory), not from the device's
// later ones.
TEST(VulkanSamplingEngineTest, SnapshotsKeepTheirLogits) {
  if (!HaveDefaultModel()) GTEST_SKIP() << "no model at " << STATICLM_DEFAULT_MODEL;
  std::string error;
  Context gpu = Create("vulkan", &error, 1);
  if (gpu == nullptr && error.find("no Vulkan") != std::string::npos) {
    GTEST_SKIP() << "no usable Vulkan device: " << error;
  }
  ASSERT_NE(gpu, nullptr) << error;
  vulkan::VulkanBackend* vk = VulkanOf(gpu.get());
  ASSERT_NE(vk, nullptr);
  std::vector<int32_t> prompt = Prompt(gpu.get());
  ASSERT_EQ(staticlm_prefill(gpu.get(), prompt.data(), prompt.size()), STATICLM_OK);
  ASSERT_EQ(staticlm_snapshot_save(gpu.get(), 0), STATICLM_OK);
  std::vector<float> saved = LogitsOf(gpu.get());
  const staticlm_sampler greedy = GreedySampler();
  int32_t first = -1, second = -1, restored = -1;
  ASSERT_EQ(staticlm_sample(gpu.get(), &greedy, &first), STATICLM_OK);
  ASSERT_EQ(staticlm_decode(gpu.get(), first), STATICLM_OK);
  ASSERT_EQ(staticlm_sample(gpu.get(), &greedy, &second), STATICLM_OK);
  ASSERT_NE(first, second) << "the check below needs the two steps to differ";
  ASSERT_EQ(staticlm_snapshot_restore(gpu.get(), 0), STATICLM_OK);
  const uint64_t before = vk->bytes_read_back();
  ASSERT_EQ(staticlm_sample(gpu.get(), &greedy, &restored), STATICLM_OK);
  EXPECT_EQ(restored, first);
  EXPECT_EQ(vk->bytes_read_back(), before) << "the restored logits are already on the host";
  std::vector<float> now = LogitsOf(gpu.get());
  EXPECT_EQ(std::memcmp(now.data(), saved.data(), saved.size() * sizeof(float)), 0);
}

// Batched sequences: each row's logits are fetched with the step (every sequence keeps its own
// copy), and a device sample of sequence s reads its row: its greedy token is the argmax of its
// own logits, and the two sequences' rows differ.
TEST(VulkanSamplingEngineTest, BatchedSequencesSampleTheirOwnRows) {
  if (!HaveDefaultModel()) GTEST_SKIP() << "no model at " << STATICLM_DEFAULT_MODEL;
  std::string error;
  Context gpu = Create("vulkan", &error, 0, 2);
  if (gpu == nullptr && error.find("no Vulkan") != std::string::npos) {
    GTEST_SKIP() << "no usable Vulkan device: " << error;
  }
  ASSERT_NE(gpu, nullptr) << error;
  vulkan::VulkanBackend* vk = VulkanOf(gpu.get());
  ASSERT_NE(vk, nullptr);
  std::vector<int32_t> prompt = Prompt(gpu.get());
  ASSERT_EQ(staticlm_seq_prefill(gpu.get(), 0, prompt.data(), prompt.size()), STATICLM_OK);
  ASSERT_EQ(staticlm_seq_prefill(gpu.get(), 1, prompt.data(), prompt.size() - 3), STATICLM_OK);
  const staticlm_sampler greedy = GreedySampler();
  const int32_t vocab = gpu->engine.config().vocab_size;
  for (int step = 0; step < 3; ++step) {
    int32_t tokens[2] = {-1, -1};
    const int32_t sequences[2] = {0, 1};
    for (int32_t s = 0; s < 2; ++s) {
      ASSERT_EQ(staticlm_seq_sample(gpu.get(), s, &greedy, &tokens[s]), STATICLM_OK);
      const float* l = staticlm_seq_logits(gpu.get(), s);
      ASSERT_NE(l, nullptr);
      EXPECT_EQ(int32_t(std::max_element(l, l + vocab) - l), tokens[s]) << "sequence " << s;
    }
    const float* l0 = staticlm_seq_logits(gpu.get(), 0);
    const float* l1 = staticlm_seq_logits(gpu.get(), 1);
    EXPECT_NE(std::memcmp(l0, l1, size_t(vocab) * sizeof(float)), 0);
    const uint64_t before = vk->bytes_read_back();
    ASSERT_EQ(staticlm_decode_batch(gpu.get(), sequences, tokens, 2), STATICLM_OK);
    EXPECT_EQ(vk->bytes_read_back() - before, 2 * uint64_t(vocab) * sizeof(float));
  }
}

// Parameters the device does not do fall back to the host: the logits are fetched (the whole
// row is read back) and the result is the host sampler's.
TEST(VulkanSamplingEngineTest, OtherSamplersFallBackToTheHost) {
  VULKAN_CONTEXT_OR_SKIP(gpu);
  vulkan::VulkanBackend* vk = VulkanOf(gpu.get());
  std::vector<int32_t> prompt = Prompt(gpu.get());
  ASSERT_EQ(staticlm_prefill(gpu.get(), prompt.data(), prompt.size()), STATICLM_OK);
  const int32_t vocab = gpu->engine.config().vocab_size;
  staticlm_sampler base;
  staticlm_sampler_default(&base);
  base.top_p = 1.0f;
  base.min_p = 0.0f;
  staticlm_sampler cases[4] = {base, base, base, base};
  cases[0].top_k = 0;  // top-p over the whole vocabulary
  cases[0].top_p = 0.9f;
  cases[1].top_k = 0;  // min-p over the whole vocabulary
  cases[1].min_p = 0.1f;
  cases[2].repetition_penalty = 1.3f;  // penalty
  cases[3].top_k = 300;                // k above the device's limit
  for (int i = 0; i < 4; ++i) {
    staticlm_reset(gpu.get());
    ASSERT_EQ(staticlm_prefill(gpu.get(), prompt.data(), prompt.size()), STATICLM_OK);
    int32_t token = -1;
    const uint64_t before = vk->bytes_read_back();
    ASSERT_EQ(staticlm_sample(gpu.get(), &cases[i], &token), STATICLM_OK);
    EXPECT_EQ(vk->bytes_read_back() - before, uint64_t(vocab) * sizeof(float)) << "case " << i;
    EXPECT_GE(token, 0);
    EXPECT_LT(token, vocab);
  }
}

#else
TEST(VulkanSamplingTest, Skipped) {
  GTEST_SKIP() << "built without Vulkan (STATICLM_VULKAN=OFF)";
}
#endif

}  // namespace
}  // namespace staticlm::vktest
