// Weights larger than the device's largest storage binding (Gemma 3's 262,144-row embedding
// table and tied output head exceed lavapipe's 128 MiB): the backend splits the matmul into
// dispatches over ranges of output columns and the embedding lookup into dispatches over
// ranges of table rows, each binding whole rows. A small forced binding limit splits these
// small weights the same way; every result is compared against the CPU reference kernels,
// with the validation layer on. Skips when this build or machine has no Vulkan device.
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "tests/vulkan_test_support.h"
#if defined(STATICLM_HAVE_VULKAN)
#include "tests/vulkan_compare.h"
#endif

namespace staticlm::vktest {
namespace {

#if defined(STATICLM_HAVE_VULKAN)

// Room for a few rows of each test weight, with the slack for the binding offset's alignment.
constexpr uint64_t kSmallBinding = 4096;

const DType kWeightTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16,
                              DType::kQ4_0, DType::kQ4_1, DType::kQ8_0};

// y = x · wᵀ with 67 output columns, every weight type and style, decode and prefill.
TEST(VulkanSplitBindingsTest, MatMulOverColumnRanges) {
  for (int style : {0, 1, 2}) {
    for (int32_t chunk : {1, 11}) {
      for (DType type : kWeightTypes) {
        SCOPED_TRACE(std::string(DTypeName(type)) + " style " + std::to_string(style) + " chunk " +
                     std::to_string(chunk));
        const int64_t n_in = 192, n_out = 67;
        PlanHarness h(chunk);
        uint32_t x = h.Tensor(BufferId::kArena, DType::kF32, {chunk, n_in}, "x");
        h.Tensor(BufferId::kWeights, DType::kF32, {64}, "room");  // for style 2's units
        uint32_t w = h.Tensor(BufferId::kWeights, type, {n_out, n_in}, "w");
        uint32_t y = h.Tensor(BufferId::kArena, DType::kF32, {chunk, n_out}, "y");
        h.AddOp(OpKind::kMatMul, {x, w}, {y}, OpParams{});
        h.Allocate();
        EXPECT_GE(TranslatedShaders(h, style, "matmul_", kSmallBinding).size(), 2u);
        EXPECT_EQ(TranslatedShaders(h, style, "matmul_").size(), 1u);
        auto wb = RandomWeights(type, n_out * n_in, 2);
        std::memcpy(h.Data(w), wb.data(), wb.size());
        PutFloats(h, x, RandomFloats(chunk * n_in, 3));
        const int32_t n_tokens = chunk == 1 ? 1 : 9;
        RUN_OR_SKIP(r, h, {{n_tokens, 0}}, style, kSmallBinding);
        ExpectClose(Values(h, r.cpu, y, n_tokens), Values(h, r.gpu, y, n_tokens), 1e-4f, "y");
      }
    }
  }
}

// The fused forms split the same way: gate and up (both weights' rows, both outputs'
// columns) and the residual accumulation.
TEST(VulkanSplitBindingsTest, FusedMatMulsOverColumnRanges) {
  for (int style : {0, 1, 2}) {
    SCOPED_TRACE("style " + std::to_string(style));
    const int64_t n_in = 128, chunk = 6, ffn = 70;
    PlanHarness h(chunk);
    uint32_t x = h.Tensor(BufferId::kArena, DType::kF32, {chunk, n_in}, "x");
    h.Tensor(BufferId::kWeights, DType::kF32, {64}, "room");
    uint32_t g = h.Tensor(BufferId::kWeights, DType::kQ8_0, {ffn, n_in}, "gate");
    uint32_t u = h.Tensor(BufferId::kWeights, DType::kQ8_0, {ffn, n_in}, "up");
    uint32_t y0 = h.Tensor(BufferId::kArena, DType::kF32, {chunk, ffn}, "y0");
    uint32_t y1 = h.Tensor(BufferId::kArena, DType::kF32, {chunk, ffn}, "y1");
    OpParams p;
    p.n_weights = 2;
    p.silu_mul = true;
    h.AddOp(OpKind::kMatMul, {x, g, u}, {y0, y1}, p);
    uint32_t wo = h.Tensor(BufferId::kWeights, DType::kF32, {n_in, ffn + 2}, "wo");
    uint32_t yp = h.Tensor(BufferId::kArena, DType::kF32, {chunk, ffn + 2}, "yp");
    uint32_t o = h.Tensor(BufferId::kArena, DType::kF32, {chunk, n_in}, "o");
    OpParams pa;
    pa.accumulate = true;
    h.AddOp(OpKind::kMatMul, {yp, wo}, {o, x}, pa);
    h.Allocate();
    EXPECT_GT(TranslatedShaders(h, style, "matmul_", kSmallBinding).size(), 4u);
    uint32_t seed = 10;
    for (uint32_t t : {g, u, wo}) {
      const TensorRegion& tr = h.plan.tensors[t];
      auto b = RandomWeights(tr.dtype, uint64_t(tr.elements()), seed++);
      std::memcpy(h.Data(t), b.data(), b.size());
    }
    PutFloats(h, x, RandomFloats(chunk * n_in, 21));
    PutFloats(h, yp, RandomFloats(chunk * (ffn + 2), 22));
    RUN_OR_SKIP(r, h, {{5, 0}}, style, kSmallBinding);
    for (uint32_t t : {y0, y1, o, x}) {
      ExpectClose(Values(h, r.cpu, t, 5), Values(h, r.gpu, t, 5), 1e-4f, h.plan.tensors[t].name);
    }
  }
}

// Each part of the table writes the rows whose ids it holds: ids in every part, at both ends
// of the table; the rows of Q4_0 and Q8_0 are not whole words, so parts are whole pairs or
// quads of them.
TEST(VulkanSplitBindingsTest, EmbedOverRowRanges) {
  for (DType type : kWeightTypes) {
    SCOPED_TRACE(DTypeName(type));
    const int64_t vocab = 131, width = 96, chunk = 8;  // odd-sized Q4_0 and Q8_0 rows
    PlanHarness h(chunk);
    uint32_t table = h.Tensor(BufferId::kWeights, type, {vocab, width}, "table");
    uint32_t out = h.Tensor(BufferId::kArena, DType::kF32, {chunk, width}, "out");
    OpParams p;
    p.embed_scale = 1.5f;
    h.AddOp(OpKind::kEmbed, {table, h.plan.tokens_tensor}, {out}, p);
    h.Allocate();
    EXPECT_GE(TranslatedShaders(h, 0, "embed_", kSmallBinding).size(), 2u);
    auto w = RandomWeights(type, vocab * width, 1);
    std::memcpy(h.Data(table), w.data(), w.size());
    int32_t ids[chunk] = {130, 0, 5, 17, 66, 41, 67, 129};
    std::memcpy(h.Data(h.plan.tokens_tensor), ids, sizeof(ids));
    RUN_OR_SKIP(r, h, {{chunk, 0}}, 0, kSmallBinding);
    ExpectClose(Values(h, r.cpu, out, chunk), Values(h, r.gpu, out, chunk), 0.0f, "embed");
  }
}

// A row larger than the binding cannot be split on whole rows: a clear status.
TEST(VulkanSplitBindingsTest, RowLargerThanBindingFails) {
  PlanHarness h(1);
  uint32_t x = h.Tensor(BufferId::kArena, DType::kF32, {1, 2048}, "x");
  uint32_t w = h.Tensor(BufferId::kWeights, DType::kF32, {4, 2048}, "w");
  uint32_t y = h.Tensor(BufferId::kArena, DType::kF32, {1, 4}, "y");
  h.AddOp(OpKind::kMatMul, {x, w}, {y}, OpParams{});
  h.Allocate();
  Status s;
  TranslateWithStyle(h, 0, &s, kSmallBinding);
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(std::strstr(s.message(), "largest storage binding"), nullptr) << s.message();
}

#else

TEST(VulkanSplitBindingsTest, Skipped) {
  GTEST_SKIP() << "built without Vulkan (STATICLM_VULKAN=OFF)";
}

#endif

}  // namespace
}  // namespace staticlm::vktest
