#include "tests/support/op_cases.h"

#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>

#include "backends/cpu/half.h"
#include "backends/cpu/matmul_int8.h"

namespace staticlm::optest {
namespace {

using vktest::PlanHarness;
using vktest::PutFloats;
using vktest::RandomFloats;
using vktest::RandomWeights;

const DType kWeightTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ8_0,
                              DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1,
                              DType::kQ4_K, DType::kQ5_K, DType::kQ6_K};

bool IsKQuant(DType t) {
  return t == DType::kQ4_K || t == DType::kQ5_K || t == DType::kQ6_K;
}
// The products quantized_activations changes: those the CPU's integer kernels take.
bool IsQuantizable(DType t) {
  return cpu::IntSupportsType(t, 8) || cpu::IntSupportsType(t, 16);
}

// An input width every layout of `t` allows and that is no power of two: K-quants need whole
// blocks of 256, the others of 32 (5 blocks), floats anything (odd for F32, even for the halves,
// whose rows a device may read two at a time).
int64_t AwkwardWidth(DType t) {
  if (IsKQuant(t)) return 768;
  if (t == DType::kF32) return 83;
  if (t == DType::kF16 || t == DType::kBF16) return 86;
  return 160;
}

void FillWeights(PlanHarness& h, uint32_t tensor, uint32_t seed) {
  const TensorRegion& t = h.plan.tensors[tensor];
  const std::vector<uint8_t> bytes =
      RandomWeights(t.dtype, static_cast<uint64_t>(t.elements()), seed);
  std::memcpy(h.Data(tensor), bytes.data(), bytes.size());
}

void FillFloats(PlanHarness& h, uint32_t tensor, uint32_t seed, float scale = 1.0f) {
  PutFloats(h, tensor,
            RandomFloats(static_cast<size_t>(h.plan.tensors[tensor].elements()), seed, scale));
}

std::string Rows(int32_t n_tokens, int32_t chunk) {
  return "rows " + std::to_string(n_tokens) + "/" + std::to_string(chunk);
}

void AddEmbedCases(std::vector<OpCase>* out) {
  uint32_t seed = 100;
  for (DType type : kWeightTypes) {
    for (float embed_scale : {1.0f, 9.8f}) {  // Gemma multiplies by sqrt(d)
      const int64_t vocab = 37, width = AwkwardWidth(type);
      const int32_t chunk = 7, n_tokens = 3;
      OpCase c = NewCase(std::string("embed ") + DTypeName(type) + " scale " +
                             std::to_string(embed_scale) + " " + Rows(n_tokens, chunk),
                         std::string("embed ") + DTypeName(type), chunk);
      PlanHarness& h = c.harness;
      uint32_t table = h.Tensor(BufferId::kWeights, type, {vocab, width}, "table");
      uint32_t x = h.Tensor(BufferId::kArena, DType::kF32, {chunk, width}, "x");
      OpParams p;
      p.embed_scale = embed_scale;
      h.AddOp(OpKind::kEmbed, {table, h.plan.tokens_tensor}, {x}, p);
      h.Allocate();
      FillWeights(h, table, seed++);
      const int32_t ids[chunk] = {36, 0, 17, 5, 2, 36, 1};
      std::memcpy(h.Data(h.plan.tokens_tensor), ids, sizeof(ids));
      c.steps = {{n_tokens, 0}, {chunk, 3}};
      c.checks = {{x, kRounding}};
      out->push_back(std::move(c));
    }
  }
}

void AddRmsNormCases(std::vector<OpCase>* out) {
  struct Shape {
    int32_t chunk, n_tokens;
    int64_t width;
    int32_t group;  // 0: whole rows, else per head of this size
  };
  const Shape shapes[] = {{1, 1, 166, 0},     {3, 3, 166, 0},       {13, 7, 166, 0},
                          {7, 7, 3 * 40, 40}, {13, 13, 5 * 24, 24}, {1, 1, 2 * 72, 72}};
  uint32_t seed = 200;
  for (const Shape& s : shapes) {
    OpCase c = NewCase("rms_norm width " + std::to_string(s.width) + " group " +
                           std::to_string(s.group) + " " + Rows(s.n_tokens, s.chunk),
                       s.group > 0 ? "rms_norm per head" : "rms_norm", s.chunk);
    PlanHarness& h = c.harness;
    uint32_t x = h.Tensor(BufferId::kArena, DType::kF32, {s.chunk, s.width}, "x");
    uint32_t w =
        h.Tensor(BufferId::kWeights, DType::kF32, {s.group > 0 ? s.group : s.width}, "weight");
    uint32_t y = h.Tensor(BufferId::kArena, DType::kF32, {s.chunk, s.width}, "y");
    OpParams p;
    p.eps = 1e-6f;
    p.norm_group = s.group;
    h.AddOp(OpKind::kRmsNorm, {x, w}, {y}, p);
    h.Allocate();
    FillFloats(h, x, seed++, 3.0f);
    FillFloats(h, w, seed++);
    c.steps = {{s.n_tokens, 0}};
    c.checks = {{y, kReduction}};
    out->push_back(std::move(c));
  }
}

// y = x · wᵀ, one weight, for every weight type: decode (1 row), prefill tiles (3, 7, 13 rows)
// and a partial tile (7 of 13).
void AddPlainMatMulCases(std::vector<OpCase>* out) {
  const int32_t shapes[][2] = {{1, 1}, {3, 3}, {7, 7}, {13, 13}, {13, 7}};  // chunk, n_tokens
  uint32_t seed = 300;
  for (DType type : kWeightTypes) {
    for (const auto& s : shapes) {
      const int32_t chunk = s[0], n_tokens = s[1];
      const int64_t n_in = AwkwardWidth(type), n_out = 67;
      OpCase c = NewCase(std::string("matmul ") + DTypeName(type) + " k " + std::to_string(n_in) +
                             " " + Rows(n_tokens, chunk),
                         std::string("matmul ") + DTypeName(type), chunk);
      c.quantizable = IsQuantizable(type);
      PlanHarness& h = c.harness;
      uint32_t x = h.Tensor(BufferId::kArena, DType::kF32, {chunk, n_in}, "x");
      uint32_t w = h.Tensor(BufferId::kWeights, type, {n_out, n_in}, "w");
      uint32_t y = h.Tensor(BufferId::kArena, DType::kF32, {chunk, n_out}, "y");
      h.AddOp(OpKind::kMatMul, {x, w}, {y}, OpParams{});
      h.Allocate();
      FillWeights(h, w, seed++);
      FillFloats(h, x, seed++);
      c.steps = {{n_tokens, 0}};
      c.checks = {{y, kProduct}};
      out->push_back(std::move(c));
    }
  }
}

// The fused forms the plan passes make (runtime/plan/fusion_passes.h), for a float, a 32-block
// and a K-quant type: RMSNorm + gate/up + SiLU (n_weights 2), Q/K/V of three widths (n_weights
// 3, the third of another type), RMSNorm of one product, and the residual accumulation.
void AddFusedMatMulCases(std::vector<OpCase>* out) {
  uint32_t seed = 400;
  for (DType type : {DType::kF16, DType::kQ4_0, DType::kQ8_0, DType::kQ4_K, DType::kQ6_K}) {
    for (int32_t chunk : {1, 7}) {
      const int64_t n_in = AwkwardWidth(type);
      const std::string rows = Rows(chunk, chunk);
      const std::string t = DTypeName(type);
      auto weight = [&](PlanHarness& h, DType dt, int64_t n_out, const char* name) {
        uint32_t w = h.Tensor(BufferId::kWeights, dt, {n_out, n_in}, name);
        return w;
      };
      // RMSNorm, gate and up, SiLU.
      {
        OpCase c =
            NewCase("matmul " + t + " norm+gate/up+silu " + rows, "matmul " + t + " fused", chunk);
        c.quantizable = IsQuantizable(type);
        PlanHarness& h = c.harness;
        uint32_t x = h.Tensor(BufferId::kArena, DType::kF32, {chunk, n_in}, "x");
        uint32_t g = weight(h, type, 70, "gate");
        uint32_t u = weight(h, type, 70, "up");
        uint32_t nw = h.Tensor(BufferId::kWeights, DType::kF32, {n_in}, "norm");
        uint32_t y0 = h.Tensor(BufferId::kArena, DType::kF32, {chunk, 70}, "y0");
        uint32_t y1 = h.Tensor(BufferId::kArena, DType::kF32, {chunk, 70}, "y1");
        uint32_t xn = h.Tensor(BufferId::kArena, DType::kF32, {chunk, n_in}, "xn");
        OpParams p;
        p.n_weights = 2;
        p.norm_input = true;
        p.silu_mul = true;
        p.eps = 1e-5f;
        h.AddOp(OpKind::kMatMul, {x, g, u, nw}, {y0, y1, xn}, p);
        h.Allocate();
        for (uint32_t tensor : {g, u}) FillWeights(h, tensor, seed++);
        FillFloats(h, nw, seed++);
        FillFloats(h, x, seed++);
        c.steps = {{chunk, 0}};
        c.checks = {{y0, kProduct}, {y1, kProduct}, {xn, kReduction}};
        out->push_back(std::move(c));
      }
      // Q, K, V of three widths sharing x (V of another type), normed.
      {
        OpCase c = NewCase("matmul " + t + " norm+q/k/v " + rows, "matmul " + t + " fused", chunk);
        c.quantizable = IsQuantizable(type);
        PlanHarness& h = c.harness;
        const DType v_type = type == DType::kF16    ? DType::kBF16
                             : type == DType::kQ8_0 ? DType::kF16
                                                    : DType::kQ8_0;
        uint32_t x = h.Tensor(BufferId::kArena, DType::kF32, {chunk, n_in}, "x");
        uint32_t wq = weight(h, type, 96, "wq");
        uint32_t wk = weight(h, type, 32, "wk");
        uint32_t wv = weight(h, v_type, 33, "wv");
        uint32_t nw = h.Tensor(BufferId::kWeights, DType::kF32, {n_in}, "norm");
        uint32_t q = h.Tensor(BufferId::kArena, DType::kF32, {chunk, 96}, "q");
        uint32_t k = h.Tensor(BufferId::kArena, DType::kF32, {chunk, 32}, "k");
        uint32_t v = h.Tensor(BufferId::kArena, DType::kF32, {chunk, 33}, "v");
        uint32_t xn = h.Tensor(BufferId::kArena, DType::kF32, {chunk, n_in}, "xn");
        OpParams p;
        p.n_weights = 3;
        p.norm_input = true;
        p.eps = 1e-6f;
        h.AddOp(OpKind::kMatMul, {x, wq, wk, wv, nw}, {q, k, v, xn}, p);
        h.Allocate();
        for (uint32_t tensor : {wq, wk, wv}) FillWeights(h, tensor, seed++);
        FillFloats(h, nw, seed++);
        FillFloats(h, x, seed++);
        c.steps = {{chunk, 0}};
        c.checks = {{q, kProduct}, {k, kProduct}, {v, kProduct}, {xn, kReduction}};
        out->push_back(std::move(c));
      }
      // The output projection accumulated into the residual.
      {
        OpCase c = NewCase("matmul " + t + " accumulate " + rows, "matmul " + t + " fused", chunk);
        c.quantizable = IsQuantizable(type);
        PlanHarness& h = c.harness;
        const int64_t n_out = 58;
        uint32_t x = h.Tensor(BufferId::kArena, DType::kF32, {chunk, n_in}, "x");
        uint32_t w = weight(h, type, n_out, "wo");
        uint32_t y = h.Tensor(BufferId::kArena, DType::kF32, {chunk, n_out}, "y");
        uint32_t acc = h.Tensor(BufferId::kArena, DType::kF32, {chunk, n_out}, "acc");
        OpParams p;
        p.accumulate = true;
        h.AddOp(OpKind::kMatMul, {x, w}, {y, acc}, p);
        h.Allocate();
        FillWeights(h, w, seed++);
        FillFloats(h, x, seed++);
        FillFloats(h, acc, seed++);
        c.steps = {{chunk, 0}};
        c.checks = {{y, kProduct}, {acc, kProduct}};
        out->push_back(std::move(c));
      }
    }
  }
}

// RoPE of queries and keys (different head counts) at positions near and far: `rope_dims` 0
// turns whole heads, more turns that many of each head's elements (partial RoPE).
OpCase RopeCase(bool halves, bool factors, float rope_scale, int32_t rope_dims, uint32_t seed) {
  const int32_t chunk = 13, n_tokens = 7, hd = 18;  // a head size of no power of two
  const int32_t pairs = (rope_dims > 0 ? rope_dims : hd) / 2;
  const std::string form = std::string("rope ") + (halves ? "halves" : "adjacent") +
                           (factors ? " factors" : "") +
                           (rope_dims > 0 ? " partial " + std::to_string(rope_dims) : "");
  OpCase c = NewCase(form + " scale " + std::to_string(rope_scale) + " " + Rows(n_tokens, chunk),
                     form, chunk, 4096);
  PlanHarness& h = c.harness;
  uint32_t q = h.Tensor(BufferId::kArena, DType::kF32, {chunk, 3 * hd}, "q");
  uint32_t k = h.Tensor(BufferId::kArena, DType::kF32, {chunk, hd}, "k");
  uint32_t f = factors ? h.Tensor(BufferId::kWeights, DType::kF32, {pairs}, "factors") : 0;
  OpParams p;
  p.head_dim = hd;
  p.rope_dims = rope_dims;
  p.rope_base = halves ? 1000000.0f : 500000.0f;
  p.rope_halves = halves;
  p.rope_scale = rope_scale;
  std::vector<uint32_t> inputs;
  if (factors) inputs.push_back(f);
  h.AddOp(OpKind::kRope, inputs, {q}, p);
  h.AddOp(OpKind::kRope, inputs, {k}, p);
  h.Allocate();
  FillFloats(h, q, seed, 2.0f);
  FillFloats(h, k, seed + 1, 2.0f);
  if (factors) {
    std::vector<float> v(static_cast<size_t>(pairs));
    for (int i = 0; i < pairs; ++i) v[size_t(i)] = 1.0f + 0.7f * float(i);
    PutFloats(h, f, v);
  }
  // In place: each step rotates the previous step's result again.
  c.steps = {{n_tokens, 0}, {1, 5}, {chunk, 1500}, {3, 4000}};
  c.checks = {{q, kRounding}, {k, kRounding}};
  return c;
}

// Adjacent pairs and halves, with and without frequency factors and an attention factor; and
// partial RoPE (10 of 18 elements: the rest must come through untouched).
void AddRopeCases(std::vector<OpCase>* out) {
  uint32_t seed = 500;
  for (bool halves : {false, true}) {
    for (bool factors : {false, true}) {
      for (float rope_scale : {1.0f, 1.19f}) {
        out->push_back(RopeCase(halves, factors, rope_scale, 0, seed));
        seed += 2;
      }
    }
  }
  for (bool halves : {false, true}) {
    out->push_back(RopeCase(halves, halves, halves ? 1.19f : 1.0f, 10, seed));
    seed += 2;
  }
}

// Gate values where exp and tanh saturate or vanish, spread over the first row (and the next).
void PutExtremes(PlanHarness& h, uint32_t tensor) {
  const float extremes[] = {0.0f, -0.0f, 9.0f, -9.0f, 30.0f, -30.0f, 80.0f, -80.0f, 1e-20f};
  float* x = reinterpret_cast<float*>(h.Data(tensor));
  const int64_t n = h.plan.tensors[tensor].elements();
  for (size_t i = 0; i < std::size(extremes) && int64_t(i * 19) < n; ++i) x[i * 19] = extremes[i];
}

// kAdd, kAddBias, kSiluMul, kGeluMul and kTakeLast, each alone on rows 1, 3, 7/13.
void AddElementwiseCases(std::vector<OpCase>* out) {
  const int32_t shapes[][2] = {{1, 1}, {3, 3}, {13, 7}};
  const int64_t width = 170;
  uint32_t seed = 600;
  for (OpKind kind :
       {OpKind::kAdd, OpKind::kAddBias, OpKind::kSiluMul, OpKind::kGeluMul, OpKind::kTakeLast}) {
    for (const auto& s : shapes) {
      const int32_t chunk = s[0], n_tokens = s[1];
      OpCase c = NewCase(std::string(OpKindName(kind)) + " " + Rows(n_tokens, chunk),
                         OpKindName(kind), chunk);
      PlanHarness& h = c.harness;
      uint32_t a = h.Tensor(BufferId::kArena, DType::kF32, {chunk, width}, "a");
      const bool bias = kind == OpKind::kAddBias;
      uint32_t b = bias ? h.Tensor(BufferId::kWeights, DType::kF32, {width}, "bias")
                        : h.Tensor(BufferId::kArena, DType::kF32, {chunk, width}, "b");
      uint32_t checked = a;
      if (kind == OpKind::kTakeLast) {
        checked = h.Tensor(BufferId::kArena, DType::kF32, {1, width}, "last");
        h.AddOp(kind, {a}, {checked}, OpParams{});
      } else {
        h.AddOp(kind, {b}, {a}, OpParams{});
      }
      h.Allocate();
      FillFloats(h, a, seed++, 3.0f);
      FillFloats(h, b, seed++, 3.0f);
      if (kind == OpKind::kSiluMul || kind == OpKind::kGeluMul) PutExtremes(h, a);
      c.steps = {{n_tokens, 0}};
      const bool exact = kind == OpKind::kAdd || bias || kind == OpKind::kTakeLast;
      c.checks = {{checked, exact ? kRounding : kReduction}};
      out->push_back(std::move(c));
    }
  }
}

}  // namespace

OpCase NewCase(const std::string& name, const std::string& form, int32_t chunk,
               int32_t max_context) {
  OpCase c;
  c.name = name;
  c.form = form;
  c.harness = PlanHarness(chunk, max_context);
  return c;
}

StepParams CaseStep::Params() const {
  StepParams p;
  p.n_tokens = n_tokens;
  p.position = position;
  p.sequence = sequence;
  if (!row_sequences.empty()) {
    p.row_sequences = row_sequences.data();
    p.row_positions = row_positions.data();
  }
  return p;
}

std::vector<OpCase> AllOpCases() {
  std::vector<OpCase> cases;
  AddEmbedCases(&cases);
  AddRmsNormCases(&cases);
  AddPlainMatMulCases(&cases);
  AddFusedMatMulCases(&cases);
  AddRopeCases(&cases);
  AddElementwiseCases(&cases);
  AddAttentionCases(&cases);
  return cases;
}

double NormalisedMse(const std::vector<float>& want, const std::vector<float>& got) {
  if (want.size() != got.size()) return std::numeric_limits<double>::infinity();
  double error = 0.0, norm = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(want[i]) || !std::isfinite(got[i])) {
      return std::numeric_limits<double>::infinity();
    }
    const double d = double(got[i]) - double(want[i]);
    error += d * d;
    norm += double(want[i]) * double(want[i]);
  }
  if (error == 0.0) return 0.0;
  return norm > 0.0 ? error / norm : std::numeric_limits<double>::infinity();
}

}  // namespace staticlm::optest
