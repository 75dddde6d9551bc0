// The CUDA backend's host side, tested on any machine: with no device (or no CUDA in the build)
// Prepare and the CLI fail in one line and `--backend auto` falls back saying why in one line;
// the sizing is computed from the plans before any allocation; the capture walks every op in
// plan order. One test needs a CUDA device (skipped with the reason where there is none): greedy
// parity with the golden continuations and no allocation of any kind after init.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "platform/alloc_counter.h"
#include "runtime/capi/capi_context.h"
#include "runtime/plan/plan_file.h"
#include "runtime/sampler/sampler.h"
#include "staticlm/staticlm.h"
#include "tests/support/cli_runner.h"
#include "tests/support/context_helpers.h"
#include "tests/support/golden_files.h"
#include "tests/support/greedy_check.h"
#include "tests/support/sampling_reference.h"
#include "tests/support/temp_path.h"
#include "tests/vulkan_test_support.h"
#if defined(STATICLM_HAVE_CUDA)
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_graph.h"
#include "backends/cuda/cuda_memory.h"
#include "backends/cuda/cuda_sizing.h"
#include "backends/cuda/cuda_step.h"
#endif

namespace staticlm {
namespace {

using vktest::PlanHarness;

// Why this machine cannot run the CUDA backend, or "" when it can.
std::string NoCudaReason() {
#if defined(STATICLM_HAVE_CUDA)
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  (void)cudaGetLastError();
  if (e != cudaSuccess) return cudaGetErrorString(e);
  return n > 0 ? "" : "no CUDA device";
#else
  return "built without CUDA (STATICLM_CUDA=OFF or no nvcc)";
#endif
}

// ---- The CLI ---------------------------------------------------------------------------------

TEST(CudaBackendTest, CliBackendCudaWithoutADeviceIsOneLineError) {
  const std::string why = NoCudaReason();
  if (why.empty()) GTEST_SKIP() << "this machine has a CUDA device";
#if defined(STATICLM_HAVE_CUDA)
  const char* expected = "CUDA";  // no driver or no device: the CUDA runtime's answer
#else
  const char* expected = "unknown backend 'cuda'";
#endif
  test::ExpectCleanFailure("run --backend cuda --max-tokens 2 --temperature 0 --prompt hi",
                           expected);
}

// `staticlm inspect --devices` and staticlm_list_cuda_devices: with the CUDA backend built,
// the CUDA devices (index, name, compute capability, memory), or one line saying why there are
// none — here, the reason ChooseDevice gives; without it, the C API says so and the CLI lists
// the Vulkan devices alone.
TEST(CudaBackendTest, DeviceListingNamesCudaDevicesOrSaysWhyNone) {
  char lines[4096], error[256] = {0};
  int n = -1;
  const staticlm_status status =
      staticlm_list_cuda_devices(lines, sizeof(lines), &n, error, sizeof(error));
  const std::string why = NoCudaReason();
  test::CliResult r = test::RunCli("inspect --devices");
  EXPECT_FALSE(r.signaled);
  std::printf("%s", r.output.c_str());
#if defined(STATICLM_HAVE_CUDA)
  if (!why.empty()) {
    EXPECT_EQ(status, STATICLM_UNSUPPORTED);
    EXPECT_EQ(n, 0);
    EXPECT_STREQ(lines, "");
    // The CUDA runtime's answer, in the words Prepare uses: no driver, or no device.
    const std::string reason = error;
    EXPECT_TRUE(reason.rfind("no CUDA driver", 0) == 0 || reason == "no CUDA device found" ||
                reason.rfind("cannot list CUDA devices (", 0) == 0)
        << reason;
    if (r.exit_code == 0) {  // a Vulkan device was listed: the CUDA line follows
      EXPECT_NE(r.output.find("Vulkan devices ("), std::string::npos) << r.output;
      EXPECT_NE(r.output.find("\nCUDA devices: none (" + reason + ")\n"), std::string::npos)
          << r.output;
    } else {  // neither: one line with both reasons
      EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
      EXPECT_EQ(r.output.rfind("staticlm: ", 0), 0u) << r.output;
      EXPECT_NE(r.output.find("; CUDA: " + reason + "\n"), std::string::npos) << r.output;
    }
    return;
  }
  ASSERT_EQ(status, STATICLM_OK) << error;
  ASSERT_GT(n, 0);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("CUDA devices (" + std::to_string(n) + "):\n" + lines), std::string::npos)
      << r.output;
  cudaDeviceProp prop;
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  const std::string first = "0: " + std::string(prop.name) + " [compute " +
                            std::to_string(prop.major) + "." + std::to_string(prop.minor) + ", ";
  EXPECT_EQ(std::string(lines).rfind(first, 0), 0u) << lines;
  EXPECT_NE(std::string(lines).find(" GiB]\n"), std::string::npos) << lines;
#else
  (void)why;
  EXPECT_EQ(status, STATICLM_UNSUPPORTED);
  EXPECT_STREQ(error, "this build has no CUDA backend");
  EXPECT_EQ(r.output.find("CUDA"), std::string::npos) << r.output;
#endif
}

TEST(CudaBackendTest, CliAutoSaysInOneLineWhatItChoseAndWhy) {
  test::CliResult r = test::RunCli("run --backend auto --max-tokens 2 --temperature 0 --prompt hi");
  EXPECT_FALSE(r.signaled);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string note = "staticlm: note: backend: ";
  const size_t at = r.output.find(note);
  ASSERT_NE(at, std::string::npos) << r.output;
  EXPECT_EQ(r.output.find(note, at + 1), std::string::npos) << "said twice: " << r.output;
  const std::string line = r.output.substr(at, r.output.find('\n', at) - at);
  std::printf("%s\n", line.c_str());
  if (NoCudaReason().empty()) {
    EXPECT_EQ(line.rfind(note + "cuda", 0), 0u) << line;
  } else {
    // Not CUDA: the line names what was chosen, then why CUDA was not.
    const bool vulkan_or_cpu =
        line.rfind(note + "vulkan (cuda: ", 0) == 0 || line.rfind(note + "cpu (cuda: ", 0) == 0;
    EXPECT_TRUE(vulkan_or_cpu) << line;
  }
}

#if defined(STATICLM_HAVE_CUDA)

// ---- Host side: no device needed -----------------------------------------------------------

// A small plan through four op kinds with a KV cache and logits in the io buffer.
PlanHarness SmallPlan(int32_t chunk, int32_t vocab) {
  PlanHarness h(chunk, 32);
  h.plan.tensors[h.plan.logits_tensor].shape[1] = vocab;
  h.plan.buffer_bytes[int(BufferId::kIo)] += uint64_t(vocab) * 4;
  uint32_t emb = h.Tensor(BufferId::kWeights, DType::kF32, {vocab, 16}, "emb");
  uint32_t norm = h.Tensor(BufferId::kWeights, DType::kF32, {16}, "norm");
  uint32_t x = h.Tensor(BufferId::kArena, DType::kF32, {chunk, 16}, "x");
  uint32_t xn = h.Tensor(BufferId::kArena, DType::kF32, {chunk, 16}, "xn");
  uint32_t last = h.Tensor(BufferId::kArena, DType::kF32, {1, 16}, "last");
  h.Tensor(BufferId::kKvCache, DType::kF16, {2, 32, 8}, "kc");
  OpParams p;
  p.eps = 1e-5f;
  h.AddOp(OpKind::kEmbed, {emb, h.plan.tokens_tensor}, {x}, p);
  h.AddOp(OpKind::kRmsNorm, {x, norm}, {xn}, p);
  h.AddOp(OpKind::kTakeLast, {xn}, {last}, p);
  OpParams one_row = p;
  one_row.rows_from_step = false;  // the last row only
  h.AddOp(OpKind::kMatMul, {last, emb}, {h.plan.logits_tensor}, one_row);
  h.Allocate();
  return h;
}

uint64_t Align256(uint64_t n) {
  return (n + 255) / 256 * 256;
}

TEST(CudaBackendTest, SizingIsEveryPlanBufferAtItsLargestPlusTheStepBlocks) {
  PlanHarness small = SmallPlan(1, 40), large = SmallPlan(8, 40);
  large.plan.buffer_bytes[int(BufferId::kKvCache)] += 1000;  // not the largest in everything
  small.plan.buffer_bytes[int(BufferId::kArena)] += 5000;
  const Plan* plans[2] = {&small.plan, &large.plan};
  const cuda::CudaSizing s = cuda::SizeForPlans(plans, 2);
  uint64_t expected_device = sizeof(cuda::DeviceStepBlock) + cuda::kWeightsSpare;
  for (int b = 0; b < kBufferCount; ++b) {
    const uint64_t largest = std::max(small.plan.buffer_bytes[b], large.plan.buffer_bytes[b]);
    const uint64_t spare = b == int(BufferId::kWeights) ? cuda::kWeightsSpare : 0;
    EXPECT_EQ(s.device_buffer[b], largest + spare) << BufferName(BufferId(b));
    expected_device += largest;
  }
  EXPECT_EQ(s.device_total, expected_device);
  // Pinned: the step block, then the largest token ids, then the largest logits, each aligned.
  EXPECT_EQ(s.max_token_bytes, 8u * 4u);
  EXPECT_EQ(s.max_logits_bytes, 40u * 4u);
  EXPECT_GE(s.pinned_tokens_offset, sizeof(cuda::PinnedStepBlock));
  EXPECT_EQ(s.pinned_tokens_offset % 256, 0u);
  EXPECT_EQ(s.pinned_logits_offset, Align256(s.pinned_tokens_offset + 8 * 4));
  EXPECT_EQ(s.pinned_total, s.pinned_logits_offset + 40 * 4);
}

// Decode attention's split partials (the backend's own scratch): sized from the op alone —
// rows × heads × splits × (head_dim + 2) floats, a split per 16 positions the op may attend to,
// at most 64 — and 0 for a prefill chunk's attention (the tiled kernel keeps its state on chip)
// and for a cache short enough for one split. SizeForPlans takes the largest of any op.
TEST(CudaBackendTest, AttentionPartialsAreSizedPerDecodeAttentionOp) {
  PlanHarness h(16, 2048);
  const uint32_t one_row = h.Tensor(BufferId::kArena, DType::kF32, {1, 9 * 64}, "out1");
  const uint32_t chunk = h.Tensor(BufferId::kArena, DType::kF32, {16, 9 * 64}, "out16");
  Op op;
  op.kind = OpKind::kAttention;
  op.n_outputs = 1;
  op.outputs[0] = one_row;
  op.params.n_heads = 9;
  op.params.n_kv_heads = 3;
  op.params.head_dim = 64;
  op.params.cache_policy = CachePolicy::kStatic;
  op.params.cache_slots = 2048;
  EXPECT_EQ(cuda::AttentionPartialBytes(h.plan, op), uint64_t{1} * 9 * 64 * 66 * 4);
  EXPECT_EQ(cuda::AttentionArrivalBytes(h.plan, op), uint64_t{1} * 9 * 4);  // a count per head
  op.params.cache_slots = 100;                                              // 7 splits
  EXPECT_EQ(cuda::AttentionPartialBytes(h.plan, op), uint64_t{1} * 9 * 7 * 66 * 4);
  op.params.cache_slots = 16;  // one split: no partials
  EXPECT_EQ(cuda::AttentionPartialBytes(h.plan, op), 0u);
  EXPECT_EQ(cuda::AttentionArrivalBytes(h.plan, op), 0u);
  // A sliding window of 512 over a ring of 575 slots: 32 splits.
  op.params.cache_policy = CachePolicy::kSlidingWindow;
  op.params.window = 512;
  op.params.cache_slots = 575;
  EXPECT_EQ(cuda::AttentionPartialBytes(h.plan, op), uint64_t{1} * 9 * 32 * 66 * 4);
  op.outputs[0] = chunk;  // a prefill chunk
  EXPECT_EQ(cuda::AttentionPartialBytes(h.plan, op), 0u);
  EXPECT_EQ(cuda::AttentionArrivalBytes(h.plan, op), 0u);
  op.kind = OpKind::kMatMul;
  op.outputs[0] = one_row;
  EXPECT_EQ(cuda::AttentionPartialBytes(h.plan, op), 0u);

  op.kind = OpKind::kAttention;
  h.plan.ops.push_back(op);
  const Plan* plans[1] = {&h.plan};
  const cuda::CudaSizing s = cuda::SizeForPlans(plans, 1);
  EXPECT_EQ(s.device_attention_partials, uint64_t{1} * 9 * 32 * 66 * 4);
  EXPECT_EQ(s.device_attention_arrivals, uint64_t{1} * 9 * 4);
  EXPECT_EQ(s.device_total - s.device_attention_partials - s.device_attention_arrivals,
            sizeof(cuda::DeviceStepBlock) + s.device_buffer[0] + s.device_buffer[1] +
                s.device_buffer[2] + s.device_buffer[3]);
}

TEST(CudaBackendTest, PrepareWithoutADeviceFailsInOneLineAfterSizingBeforeAllocating) {
  const std::string why = NoCudaReason();
  if (why.empty()) GTEST_SKIP() << "this machine has a CUDA device";
  PlanHarness h = SmallPlan(4, 40);
  const Plan* plans[1] = {&h.plan};
  BackendOptions options;
  cuda::CudaBackend backend(options);
  const cuda::CudaAllocCounts before = cuda::AllocCounts();
  Status s = backend.Prepare(plans, 1, h.Binding());
  ASSERT_FALSE(s.ok());
  std::printf("Prepare: %s\n", s.message());
  EXPECT_EQ(std::strchr(s.message(), '\n'), nullptr) << s.message();
  const bool names_the_cause = std::strstr(s.message(), "no CUDA device found") != nullptr ||
                               std::strstr(s.message(), "no CUDA driver") != nullptr;
  EXPECT_TRUE(names_the_cause) << s.message();
  EXPECT_EQ(cuda::AllocCounts().total(), before.total());
  EXPECT_EQ(backend.sizing().device_total, cuda::SizeForPlans(plans, 1).device_total);
  EXPECT_GT(backend.sizing().device_total, h.plan.buffer_bytes[int(BufferId::kWeights)]);
  // Unprepared: every run-phase call refuses.
  EXPECT_FALSE(backend.Execute(0, {1, 0}).ok());
  EXPECT_FALSE(backend.FetchLogits(0, 0, 1).ok());
  int32_t token = -1;
  EXPECT_FALSE(backend.SampleOnDevice(0, 0, DeviceSampling{}, &token).ok());
  uint8_t byte = 0;
  EXPECT_FALSE(backend.ReadBuffer(BufferId::kKvCache, 0, 1, &byte).ok());
}

TEST(CudaBackendTest, DeviceIndexOutOfRangeIsOneLineError) {
  BackendOptions options;
  options.device = 64;
  PlanHarness h = SmallPlan(1, 40);
  const Plan* plans[1] = {&h.plan};
  cuda::CudaBackend backend(options);
  Status s = backend.Prepare(plans, 1, h.Binding());
  ASSERT_FALSE(s.ok());
  std::printf("device 64: %s\n", s.message());
  EXPECT_EQ(std::strchr(s.message(), '\n'), nullptr);
  if (NoCudaReason().empty()) {
    EXPECT_NE(std::strstr(s.message(), "CUDA device 64 does not exist"), nullptr) << s.message();
  }
}

// The capture's walk, recorded instead of launched.
std::vector<const cuda::StepValues*> g_steps;
std::vector<const Op*> g_ops;
const uint8_t* g_arena = nullptr;
size_t g_fail_at = SIZE_MAX;

cudaError_t Record(const Plan& plan, const Op& op, const cuda::DeviceBuffers& buffers,
                   const cuda::StepValues* step, cudaStream_t stream) {
  (void)plan, (void)stream;
  if (g_ops.size() == g_fail_at) return cudaErrorInvalidValue;
  g_ops.push_back(&op);
  g_steps.push_back(step);
  g_arena = buffers.base[int(BufferId::kArena)];
  return cudaSuccess;
}

TEST(CudaBackendTest, CaptureEnqueuesEveryOpInPlanOrderWithTheDeviceStep) {
  PlanHarness h = SmallPlan(4, 40);
  cuda::DeviceBuffers buffers{};
  uint8_t arena_stand_in[16];
  buffers.base[int(BufferId::kArena)] = arena_stand_in;
  cuda::StepValues device_step_stand_in{};
  g_ops.clear(), g_steps.clear(), g_fail_at = SIZE_MAX;
  Status s = cuda::EnqueuePlan(h.plan, buffers, &device_step_stand_in, nullptr, &Record);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(g_ops.size(), h.plan.ops.size());
  for (size_t i = 0; i < g_ops.size(); ++i) {
    EXPECT_EQ(g_ops[i], &h.plan.ops[i]) << "op " << i;
    EXPECT_EQ(g_steps[i], &device_step_stand_in) << "op " << i;
  }
  EXPECT_EQ(g_arena, arena_stand_in);
  // A launch error stops the walk and names the op.
  g_ops.clear(), g_steps.clear(), g_fail_at = 1;
  s = cuda::EnqueuePlan(h.plan, buffers, &device_step_stand_in, nullptr, &Record);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(g_ops.size(), 1u);
  EXPECT_NE(std::strstr(s.message(), "op 1 (rms_norm)"), nullptr) << s.message();
  g_fail_at = SIZE_MAX;
}

// A layer's q and k ropes are one launch: the second of a pair of alike ropes (rows,
// positions, frequencies) on tensors apart joins the first; in a longer run, pairs are taken
// from the start; a rope of another base, or on the same tensor, starts afresh.
TEST(CudaBackendTest, AlikeRopesArePairedIntoOneLaunch) {
  PlanHarness h(1, 32);
  const uint32_t q = h.Tensor(BufferId::kArena, DType::kF32, {1, 4 * 8}, "q");
  const uint32_t k = h.Tensor(BufferId::kArena, DType::kF32, {1, 8}, "k");
  const uint32_t k2 = h.Tensor(BufferId::kArena, DType::kF32, {1, 8}, "k2");
  const uint32_t k3 = h.Tensor(BufferId::kArena, DType::kF32, {1, 8}, "k3");
  OpParams p;
  p.head_dim = 8;
  p.rope_base = 10000.0f;
  OpParams other_base = p;
  other_base.rope_base = 1e6f;
  h.AddOp(OpKind::kRope, {}, {q}, p);           // 0: first of a pair
  h.AddOp(OpKind::kRope, {}, {k}, p);           // 1: joins 0
  h.AddOp(OpKind::kRope, {}, {k2}, p);          // 2: a third alike: a pair of its own
  h.AddOp(OpKind::kRope, {}, {k3}, p);          // 3: joins 2
  h.AddOp(OpKind::kRope, {}, {k3}, p);          // 4: the same tensor as 3: starts afresh
  h.AddOp(OpKind::kRope, {}, {q}, other_base);  // 5: another base
  h.AddOp(OpKind::kRope, {}, {k}, other_base);  // 6: joins 5
  const bool joins[] = {false, true, false, true, false, false, true};
  ASSERT_EQ(h.plan.ops.size(), std::size(joins));
  for (size_t i = 0; i < h.plan.ops.size(); ++i) {
    EXPECT_EQ(cuda::RopeJoinsPrevious(h.plan, h.plan.ops[i]), joins[i]) << "op " << i;
  }
  const Op outside = h.plan.ops[1];  // not one of the plan's ops: never joined
  EXPECT_FALSE(cuda::RopeJoinsPrevious(h.plan, outside));
}

// The ops whose work an earlier op's launch does (kernels/op_joins.cu), on a Gemma 3 layer's
// pattern: the k norm joins the q norm (alike per-head norms on tensors apart), the k rope the q
// rope, each add of a post-norm's output joins that norm, and a GeGLU's up product and gelu_mul
// join its gate product. Each near miss stays a launch of its own.
TEST(CudaBackendTest, AGemmaLayersJoinableOpsJoinTheLaunchBeforeThem) {
  PlanHarness h(1, 32);
  const int64_t d = 64, hd = 16, ff = 96;
  auto arena = [&](int64_t width, const char* name) {
    return h.Tensor(BufferId::kArena, DType::kF32, {1, width}, name);
  };
  auto weight = [&](std::vector<int64_t> shape, const char* name) {
    return h.Tensor(BufferId::kWeights, shape.size() == 1 ? DType::kF32 : DType::kQ8_0, shape,
                    name);
  };
  const uint32_t residual = arena(d, "residual"), x = arena(d, "x"), q_raw = arena(4 * hd, "q_raw"),
                 k_raw = arena(hd, "k_raw"), q = arena(4 * hd, "q"), k = arena(hd, "k"),
                 post = arena(d, "post"), gate = arena(ff, "gate"), up = arena(ff, "up"),
                 other = arena(ff, "other");
  const uint32_t q_norm = weight({hd}, "q_norm"), k_norm = weight({hd}, "k_norm"),
                 post_norm = weight({d}, "post_norm"), w_gate = weight({ff, d}, "w_gate"),
                 w_up = weight({ff, d}, "w_up");
  OpParams head_norm;
  head_norm.eps = 1e-6f;
  head_norm.norm_group = hd;
  OpParams row_norm;
  row_norm.eps = 1e-6f;
  OpParams rope;
  rope.head_dim = hd;
  rope.rope_base = 1e4f;
  h.AddOp(OpKind::kRmsNorm, {q_raw, q_norm}, {q}, head_norm);   // 0
  h.AddOp(OpKind::kRmsNorm, {k_raw, k_norm}, {k}, head_norm);   // 1: joins 0
  h.AddOp(OpKind::kRope, {}, {q}, rope);                        // 2
  h.AddOp(OpKind::kRope, {}, {k}, rope);                        // 3: joins 2
  h.AddOp(OpKind::kRmsNorm, {x, post_norm}, {post}, row_norm);  // 4
  h.AddOp(OpKind::kAdd, {post}, {residual}, {});                // 5: joins 4
  h.AddOp(OpKind::kMatMul, {residual, w_gate}, {gate}, {});     // 6: launches gate and up
  h.AddOp(OpKind::kMatMul, {residual, w_up}, {up}, {});         // 7: joins 6
  h.AddOp(OpKind::kGeluMul, {up}, {gate}, {});                  // 8: joins 6
  // Near misses.
  h.AddOp(OpKind::kRmsNorm, {q_raw, q_norm}, {q}, head_norm);   // 9
  h.AddOp(OpKind::kRmsNorm, {q, k_norm}, {k}, head_norm);       // 10: reads what 9 writes
  h.AddOp(OpKind::kRmsNorm, {x, post_norm}, {post}, row_norm);  // 11
  h.AddOp(OpKind::kAdd, {x}, {residual}, {});                   // 12: adds another tensor
  h.AddOp(OpKind::kRmsNorm, {x, post_norm}, {post}, row_norm);  // 13
  h.AddOp(OpKind::kAdd, {post}, {x}, {});                       // 14: into the norm's input
  h.AddOp(OpKind::kMatMul, {residual, w_gate}, {gate}, {});     // 15
  h.AddOp(OpKind::kMatMul, {x, w_up}, {up}, {});                // 16: another x
  h.AddOp(OpKind::kGeluMul, {up}, {gate}, {});                  // 17
  h.AddOp(OpKind::kMatMul, {residual, w_gate}, {gate}, {});     // 18
  h.AddOp(OpKind::kMatMul, {residual, w_up}, {up}, {});         // 19
  h.AddOp(OpKind::kGeluMul, {other}, {gate}, {});               // 20: of another tensor
  const bool joins[] = {false, true,  false, true,  false, true,  false, true,  true,  false, false,
                        false, false, false, false, false, false, false, false, false, false};
  ASSERT_EQ(h.plan.ops.size(), std::size(joins));
  for (size_t i = 0; i < h.plan.ops.size(); ++i) {
    EXPECT_EQ(cuda::JoinsPreviousLaunch(h.plan, h.plan.ops[i]), joins[i]) << "op " << i;
  }
}

// On Gemma 3's own decode plan (built by the CLI for the cuda backend): in every one of its 18
// layers the k rope, both adds of a post-norm's output, the up product and the gelu_mul join an
// earlier launch — and the k norm does not, since the arena puts k where q_raw was, which the q
// norm still reads.
TEST(CudaBackendTest, Gemma3DecodePlanJoinsFiveOpsALayer) {
  const std::string path = staticlm::test::TempPath("gemma3-cuda.plan");
  const staticlm::test::CliResult r = staticlm::test::RunCli(
      std::string("plan --model ") + STATICLM_GEMMA_MODEL + " --backend cuda -o " + path);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  PlanFileContents contents;
  const Status s = LoadPlanFile(path.c_str(), &contents);
  std::remove(path.c_str());
  ASSERT_TRUE(s.ok()) << s.message();
  const Plan& plan = contents.plans[0];
  int joined[16] = {};
  for (const Op& op : plan.ops) {
    if (cuda::JoinsPreviousLaunch(plan, op)) ++joined[static_cast<int>(op.kind)];
  }
  EXPECT_EQ(joined[static_cast<int>(OpKind::kRope)], 18);
  EXPECT_EQ(joined[static_cast<int>(OpKind::kAdd)], 36);
  EXPECT_EQ(joined[static_cast<int>(OpKind::kMatMul)], 18);
  EXPECT_EQ(joined[static_cast<int>(OpKind::kGeluMul)], 18);
  EXPECT_EQ(joined[static_cast<int>(OpKind::kRmsNorm)], 0);
  int all = 0;
  for (int n : joined) all += n;
  EXPECT_EQ(all, 5 * 18);
}

TEST(CudaBackendTest, StepValuesCarryTheRowsOnlyForRowsAreSequencesPlans) {
  PlanHarness rows = SmallPlan(4, 40);
  rows.plan.limits.rows_are_sequences = true;
  const int32_t sequences[3] = {2, 0, 1}, positions[3] = {7, 9, 11};
  cuda::StepValues v;
  std::memset(&v, 0x5a, sizeof(v));
  cuda::FillStepValues(rows.plan, {3, 0, 0, sequences, positions}, &v);
  EXPECT_EQ(v.n_tokens, 3);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(v.row_sequences[r], sequences[r]);
    EXPECT_EQ(v.row_positions[r], positions[r]);
  }
  EXPECT_EQ(v.row_sequences[3], 0);  // nothing left from an earlier step
  PlanHarness chunk = SmallPlan(4, 40);
  cuda::FillStepValues(chunk.plan, {2, 5, 1, nullptr, nullptr}, &v);
  EXPECT_EQ(v.n_tokens, 2);
  EXPECT_EQ(v.position, 5);
  EXPECT_EQ(v.sequence, 1);
  EXPECT_EQ(v.row_positions[0], 0);
}

// ---- On a CUDA device --------------------------------------------------------------------

// A context of the default model on device 0 (the test has checked that there is one).
test::ContextPtr CudaContext(int32_t max_context, int32_t prefill_chunk) {
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.max_context = max_context;
  limits.prefill_chunk = prefill_chunk;
  limits.backend = "cuda";
  test::ContextPtr ctx = test::CreateContext(STATICLM_DEFAULT_MODEL, limits);
  if (ctx != nullptr) std::printf("%s\n", staticlm_backend_description(ctx.get()));
  return ctx;
}

// The golden continuations of transformers on the real SmolLM2 weights (a synthetic copy of the
// file, scripts/synthetic-gguf, cannot pass this one; the CUDA parity test covers it there).
TEST(CudaBackendTest, GpuGreedyMatchesTheGoldenContinuations) {
  const std::string why = NoCudaReason();
  if (!why.empty()) GTEST_SKIP() << "needs a CUDA device: " << why;
  if (!test::HaveDefaultModel()) GTEST_SKIP() << "no default model";
  std::vector<test::GreedyCase> cases;
  std::string error;
  ASSERT_TRUE(test::ReadGreedyGolden(STATICLM_GOLDEN_DIR "/greedy.txt", &cases, &error)) << error;
  test::ContextPtr ctx = CudaContext(512, 64);
  ASSERT_NE(ctx, nullptr);
  // The tolerance the CPU backend's golden test uses (tests/golden_test.cpp).
  test::CheckGreedyCases(ctx.get(), cases, 0.1f);
}

// After init, decode steps and device sampling make no CUDA allocation (counted by the
// backend's own wrappers), no heap allocation and no thread.
TEST(CudaBackendTest, GpuStepsAllocateNothingAfterInit) {
  const std::string why = NoCudaReason();
  if (!why.empty()) GTEST_SKIP() << "needs a CUDA device: " << why;
  if (!test::HaveDefaultModel()) GTEST_SKIP() << "no default model";
  test::ContextPtr ctx = CudaContext(512, 64);
  ASSERT_NE(ctx, nullptr);
  const std::vector<int32_t> prompt = test::Tokens(ctx.get(), "The three primary colours are");
  ASSERT_EQ(staticlm_prefill(ctx.get(), prompt.data(), prompt.size()), STATICLM_OK);
  staticlm_sampler greedy;
  staticlm_sampler_default(&greedy);
  greedy.temperature = 0.0f;
  const cuda::CudaAllocCounts before = cuda::AllocCounts();
  namespace counter = alloc_counter;
  if (counter::Available()) counter::Start();
  for (int i = 0; i < 32; ++i) {
    int32_t token = -1;
    ASSERT_EQ(staticlm_sample(ctx.get(), &greedy, &token), STATICLM_OK);
    ASSERT_EQ(staticlm_decode(ctx.get(), token), STATICLM_OK);
  }
  if (counter::Available()) counter::Stop();
  EXPECT_EQ(cuda::AllocCounts().total(), before.total());
  if (counter::Available()) {
    char where[4096] = {0};
    if (counter::Events() != 0) counter::DescribeFirstEvent(where, sizeof(where));
    EXPECT_EQ(counter::Allocations(), 0u) << where;
    EXPECT_EQ(counter::ThreadsCreated(), 0u) << where;
  }
}

// Greedy on the device: the token is the argmax of the logits fetched after it (the lowest id
// among equal maxima, as the host sampler takes).
void ExpectDeviceGreedyIsTheArgmax(staticlm_context* ctx, std::vector<int32_t> prompt) {
  staticlm_reset(ctx);
  ASSERT_EQ(staticlm_prefill(ctx, prompt.data(), prompt.size()), STATICLM_OK);
  staticlm_sampler greedy;
  staticlm_sampler_default(&greedy);
  greedy.temperature = 0.0f;
  for (int step = 0; step < 12; ++step) {
    int32_t token = -1;
    ASSERT_EQ(staticlm_sample(ctx, &greedy, &token), STATICLM_OK);
    EXPECT_EQ(token, test::Argmax(test::Logits(ctx))) << "step " << step;
    ASSERT_EQ(staticlm_decode(ctx, token), STATICLM_OK);
  }
}

// Seeded top-k with top-p and min-p (the default sampler's filters) and greedy, chosen on the
// device from `model`'s logits: each top-k token is the host Sampler's for the logits fetched
// after the device sample and a generator seeded alike (a draw or filter within rounding of a
// boundary, where the device's expf may differ from the host's by an ulp, stops the
// comparison), and the same generation with device sampling off gives the same tokens.
void ExpectDeviceSamplingIsTheHostSamplers(const char* model) {
  const std::string why = NoCudaReason();
  if (!why.empty()) GTEST_SKIP() << "needs a CUDA device: " << why;
  FILE* f = std::fopen(model, "rb");
  if (f == nullptr) GTEST_SKIP() << model << " is absent";
  std::fclose(f);
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.max_context = 128;
  limits.prefill_chunk = 16;
  limits.backend = "cuda";
  test::ContextPtr ctx = test::CreateContext(model, limits);
  ASSERT_NE(ctx, nullptr);
  staticlm_sampler sampler;
  staticlm_sampler_default(&sampler);
  sampler.temperature = 1.2f;
  sampler.top_k = 40;
  sampler.top_p = 0.8f;
  sampler.min_p = 0.02f;
  const SamplerParams params = capi::ToSamplerParams(sampler);
  const int32_t vocab = ctx->engine.config().vocab_size;
  Sampler host;
  ASSERT_TRUE(host.Init(vocab).ok());
  const uint64_t seed = 99;
  host.Seed(seed);
  const char* text = "The three primary colours are red, yellow and";
  std::vector<int32_t> prompt(64);
  size_t n = 0;
  ASSERT_EQ(
      staticlm_tokenize(ctx.get(), text, std::strlen(text), 0, prompt.data(), prompt.size(), &n),
      STATICLM_OK);
  prompt.resize(n);
  staticlm_seed(ctx.get(), seed);
  ASSERT_EQ(staticlm_prefill(ctx.get(), prompt.data(), prompt.size()), STATICLM_OK);
  std::vector<int32_t> device_tokens;
  for (int step = 0; step < 16; ++step) {
    Rng peek = host.rng();
    const double u = peek.NextUnit();
    int32_t token = -1, want = -1;
    ASSERT_EQ(staticlm_sample(ctx.get(), &sampler, &token), STATICLM_OK);
    const float* l = staticlm_logits(ctx.get());
    ASSERT_NE(l, nullptr);
    const std::vector<float> logits(l, l + vocab);
    ASSERT_TRUE(host.Sample(logits.data(), nullptr, 0, params, &want).ok());
    if (test::NearBoundary(test::FilteredInDouble(logits, params.top_k, params.temperature,
                                                  params.top_p, params.min_p),
                           u)) {
      std::printf("step %d: within rounding of a boundary; comparison stops\n", step);
      break;
    }
    ASSERT_EQ(token, want) << "step " << step << " u " << u;
    device_tokens.push_back(token);
    ASSERT_EQ(staticlm_decode(ctx.get(), token), STATICLM_OK);
  }
  EXPECT_GE(device_tokens.size(), 8u);
  ctx->engine.set_device_sampling(false);
  staticlm_reset(ctx.get());
  staticlm_seed(ctx.get(), seed);
  ASSERT_EQ(staticlm_prefill(ctx.get(), prompt.data(), prompt.size()), STATICLM_OK);
  for (size_t step = 0; step < device_tokens.size(); ++step) {
    int32_t token = -1;
    ASSERT_EQ(staticlm_sample(ctx.get(), &sampler, &token), STATICLM_OK);
    EXPECT_EQ(token, device_tokens[step]) << "step " << step;
    ASSERT_EQ(staticlm_decode(ctx.get(), token), STATICLM_OK);
  }
  ctx->engine.set_device_sampling(true);
  ExpectDeviceGreedyIsTheArgmax(ctx.get(), prompt);
}

TEST(CudaBackendTest, GpuSamplingMatchesTheHostSamplerOnSmolLm2) {
  ExpectDeviceSamplingIsTheHostSamplers(STATICLM_DEFAULT_MODEL);
}

// A vocabulary of 262,144: every one of the 64 slices holds thousands of logits.
TEST(CudaBackendTest, GpuSamplingMatchesTheHostSamplerOnGemma3) {
  ExpectDeviceSamplingIsTheHostSamplers(STATICLM_GEMMA_MODEL);
}

#endif  // STATICLM_HAVE_CUDA

}  // namespace
}  // namespace staticlm
