// The CUDA kernels' OpSupported (backends/cuda/kernels/op_dispatch.cu) on the host, no GPU
// needed: every op of the real models' plans (SmolLM2 Q4_1, Gemma 3 Q4_K_M) under every cache
// policy, KV type, fusion set and batch form has a kernel, and the forms without one are refused
// with a message naming what is missing. Skips where the build has no CUDA toolkit.
#include <gtest/gtest.h>

#include <cstring>
#include <initializer_list>
#include <string>

#include "contract/plan.h"
#include "runtime/gguf/gguf_file.h"
#include "runtime/model/model_config.h"
#include "runtime/plan/decoder_plan_builder.h"
#include "runtime/plan/fusion_passes.h"

#if STATICLM_TEST_CUDA_KERNELS
#include "backends/cuda/cuda_ops.h"
#endif

namespace staticlm {
namespace {

#if STATICLM_TEST_CUDA_KERNELS

struct Limits {
  const char* name;
  DType kv;
  int32_t window, sinks, global_every;
  bool batched;
  int32_t global_window = 0;  // sinks on the global layers (a hybrid model's endless mode)
};

constexpr Limits kLimits[] = {
    {"static f16", DType::kF16, 0, 0, 0, false},
    {"static f32", DType::kF32, 0, 0, 0, false},
    {"static q8", kDTypeI8, 0, 0, 0, false},
    {"static q4", kDTypeKvQ4, 0, 0, 0, false},
    {"sliding f16", DType::kF16, 64, 0, 0, false},
    {"sinks q8", kDTypeI8, 64, 4, 0, false},
    {"hybrid q4", kDTypeKvQ4, 64, 0, 3, false},
    {"batched f16", DType::kF16, 0, 0, 0, true},
    {"batched sliding q4", kDTypeKvQ4, 64, 0, 0, true},
    {"sinks on the global layers f16", DType::kF16, 64, 4, 3, false, 128},
    {"sinks on the global layers q4", kDTypeKvQ4, 64, 4, 3, false, 128},
};

// Builds `model`'s plan under `l` with `fusions` and checks each op; returns the kinds seen.
uint32_t ExpectEveryOpSupported(const char* model, const Limits& l, uint32_t fusions) {
  SCOPED_TRACE(std::string(model) + ", " + l.name + (fusions == 0 ? ", unfused" : ", fused"));
  uint32_t kinds = 0;
  gguf::GgufFile file;
  EXPECT_TRUE(file.Open(model).ok());
  ModelConfig config;
  EXPECT_TRUE(ReadModelConfig(file, &config).ok());
  PlanLimits limits;
  limits.max_context = 256;
  limits.prefill_chunk = l.batched ? 4 : 32;
  limits.max_batch = l.batched ? 4 : 1;
  limits.rows_are_sequences = l.batched;
  limits.kv_dtype = l.kv;
  limits.window = l.window;
  limits.sinks = l.sinks;
  limits.global_every = l.global_every;
  limits.global_window = l.global_window;
  limits.cache_chunk = limits.prefill_chunk;
  Plan plan;
  ArenaReport arena;
  const Status built = BuildDecoderPlan(file, config, limits, fusions, &plan, &arena);
  EXPECT_TRUE(built.ok()) << built.message();
  for (const Op& op : plan.ops) {
    const char* why = nullptr;
    EXPECT_TRUE(cuda::OpSupported(plan, op, &why))
        << OpKindName(op.kind) << ": " << (why != nullptr ? why : "(no message)");
    kinds |= 1u << static_cast<int>(op.kind);
  }
  return kinds;
}

// Every limits case (sinks too, on adjacent-pair and halves RoPE alike) with and without
// fusions. Checks that every op kind was met.
void ExpectEveryPlanSupported(const char* model, uint32_t expected_kinds) {
  uint32_t kinds = 0;
  for (const Limits& l : kLimits) {
    for (uint32_t fusions : {0u, kAllFusions}) kinds |= ExpectEveryOpSupported(model, l, fusions);
  }
  EXPECT_EQ(kinds, expected_kinds);
}

uint32_t Kinds(std::initializer_list<OpKind> list) {
  uint32_t kinds = 0;
  for (OpKind k : list) kinds |= 1u << static_cast<int>(k);
  return kinds;
}

const uint32_t kCommonKinds =
    Kinds({OpKind::kEmbed, OpKind::kRmsNorm, OpKind::kMatMul, OpKind::kRope, OpKind::kKvStore,
           OpKind::kAttention, OpKind::kAdd, OpKind::kTakeLast});

bool Have(const char* path) {
  FILE* f = std::fopen(path, "rb");
  if (f != nullptr) std::fclose(f);
  return f != nullptr;
}

TEST(CudaKernelsTest, EveryOpOfSmolLm2PlansHasAKernel) {
  if (!Have(STATICLM_DEFAULT_MODEL)) GTEST_SKIP() << STATICLM_DEFAULT_MODEL << " is absent";
  ExpectEveryPlanSupported(STATICLM_DEFAULT_MODEL, kCommonKinds | Kinds({OpKind::kSiluMul}));
}

TEST(CudaKernelsTest, EveryOpOfGemma3PlansHasAKernel) {
  if (!Have(STATICLM_GEMMA_MODEL)) GTEST_SKIP() << STATICLM_GEMMA_MODEL << " is absent";
  ExpectEveryPlanSupported(STATICLM_GEMMA_MODEL, kCommonKinds | Kinds({OpKind::kGeluMul}));
}

// A one-op plan: tensor 0 is the op's first input, tensor 1 its output.
Plan OneOp(OpKind kind, DType input_type) {
  Plan plan;
  plan.tensors.resize(4);
  plan.tensors[0].dtype = input_type;
  plan.tensors[1].dtype = DType::kF32;
  Op op;
  op.kind = kind;
  op.n_inputs = 4;
  op.n_outputs = 2;
  op.inputs[0] = 1;
  op.inputs[1] = 0;
  op.inputs[2] = 0;
  op.outputs[0] = 0;
  op.outputs[1] = 0;
  plan.ops.push_back(op);
  return plan;
}

TEST(CudaKernelsTest, FormsWithoutAKernelAreRefusedWithAMessage) {
  const char* why = nullptr;
  Plan matmul = OneOp(OpKind::kMatMul, DType::kI32);
  EXPECT_FALSE(cuda::OpSupported(matmul, matmul.ops[0], &why));
  ASSERT_NE(why, nullptr);
  EXPECT_NE(std::strstr(why, "kMatMul"), nullptr) << why;

  Plan embed = OneOp(OpKind::kEmbed, DType::kI32);
  embed.ops[0].inputs[0] = 0;
  why = nullptr;
  EXPECT_FALSE(cuda::OpSupported(embed, embed.ops[0], &why));
  ASSERT_NE(why, nullptr);
  EXPECT_NE(std::strstr(why, "kEmbed"), nullptr) << why;

  Plan attention = OneOp(OpKind::kAttention, DType::kF16);
  attention.ops[0].params.head_dim = 512;
  why = nullptr;
  EXPECT_FALSE(cuda::OpSupported(attention, attention.ops[0], &why));
  ASSERT_NE(why, nullptr);
  EXPECT_NE(std::strstr(why, "head"), nullptr) << why;
  attention.ops[0].params.head_dim = 256;
  EXPECT_TRUE(cuda::OpSupported(attention, attention.ops[0], &why));

  Plan accumulate = OneOp(OpKind::kMatMul, DType::kF32);
  accumulate.ops[0].params.accumulate = true;
  accumulate.tensors[2].offset = 64;  // y0: apart from x (tensor 1, at 0)
  accumulate.ops[0].outputs[0] = 2;
  accumulate.ops[0].outputs[1] = 3;  // acc, at 0 too: x itself
  EXPECT_FALSE(cuda::OpSupported(accumulate, accumulate.ops[0], &why));
  EXPECT_NE(std::strstr(why, "overlaps"), nullptr) << why;
  accumulate.tensors[3].offset = 128;
  EXPECT_TRUE(cuda::OpSupported(accumulate, accumulate.ops[0], &why)) << why;
}

#else

TEST(CudaKernelsTest, SkippedWithoutTheCudaToolkit) {
  GTEST_SKIP() << "this build has no CUDA toolkit (STATICLM_CUDA=OFF or no nvcc): no kernels";
}

#endif

}  // namespace
}  // namespace staticlm
