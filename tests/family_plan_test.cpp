// The decoder families lower to the ops their architecture rows and tensors call for
// (runtime/model/architecture.cpp, runtime/plan/decoder_plan_builder.cpp): Qwen 2's q/k/v
// biases, Qwen 3's per-head q/k norms, Llama 3's RoPE frequency factors and tied head, Phi-3's
// fused qkv and gate/up tensors as views and its longrope factors, a sliding window from the
// metadata on every layer (Mistral), and one-line errors naming the field and value for what
// staticlm does not run. Each model is a small GGUF written here in llama.cpp's layout; the
// numbers these plans compute are checked against transformers by family_golden_test.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "contract/plan_validation.h"
#include "runtime/gguf/gguf_file.h"
#include "runtime/model/model_config.h"
#include "runtime/plan/decoder_plan_builder.h"
#include "runtime/plan/fusion_passes.h"
#include "runtime/plan/plan_file.h"
#include "runtime/plan/plan_hash.h"
#include "staticlm/staticlm.h"
#include "tests/support/gguf_writer.h"
#include "tests/support/temp_path.h"
#include "tests/support/weight_encoding.h"

namespace staticlm {
namespace {

using test::GgufWriter;

// What the tiny model of a family has; the defaults are a tied Llama.
struct Family {
  std::string arch = "llama";
  int64_t d = 64, heads = 4, kv_heads = 2, head_dim = 16, ffn = 96, layers = 2, vocab = 40;
  bool untied = false, qkv_bias = false, qk_norm = false, fused_qkv = false, fused_gate_up = false;
  bool rope_freqs = false, longrope = false;
  uint32_t context = 256, original_context = 0, sliding_window = 0;
  float attn_factor = 0.0f;        // 0: no key
  std::string scaling_type;        // "": no key
  float scaling_factor = 0.0f;     // 0: no key
  float first_rope_factor = 1.5f;  // of every factor tensor
  float attention_scale = 0.0f;    // 0: no key
  float rope_base = 10000.0f;
  uint32_t rope_dims = 0;    // 0: no rope.dimension_count key
  int64_t factor_count = 0;  // of each factor tensor; 0: one per pair RoPE turns
};

// The factors a tensor of them holds: one per pair RoPE turns, unless the test says otherwise.
int64_t RopePairs(const Family& f) {
  if (f.factor_count > 0) return f.factor_count;
  return (f.rope_dims > 0 ? static_cast<int64_t>(f.rope_dims) : f.head_dim) / 2;
}

void AddF32(GgufWriter* w, const std::string& name, std::vector<int64_t> ne, float value = 0.0f) {
  int64_t n = 1;
  for (int64_t e : ne) n *= e;
  std::vector<float> x(static_cast<size_t>(n), value);
  w->AddTensor(name, ne, DType::kF32, test::EncodeFloats(DType::kF32, x));
}

// Factors first, f, f + 0.5, ...: distinct so that a test can tell the tensors apart.
void AddFactors(GgufWriter* w, const std::string& name, int64_t n, float first) {
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = first + 0.5f * static_cast<float>(i);
  w->AddTensor(name, {n}, DType::kF32, test::EncodeFloats(DType::kF32, x));
}

void AddMetadata(const Family& f, GgufWriter* w) {
  const std::string a = f.arch + ".";
  w->AddString("general.architecture", f.arch);
  w->AddU32(a + "block_count", static_cast<uint32_t>(f.layers));
  w->AddU32(a + "context_length", f.context);
  w->AddU32(a + "embedding_length", static_cast<uint32_t>(f.d));
  w->AddU32(a + "feed_forward_length", static_cast<uint32_t>(f.ffn));
  w->AddU32(a + "attention.head_count", static_cast<uint32_t>(f.heads));
  w->AddU32(a + "attention.head_count_kv", static_cast<uint32_t>(f.kv_heads));
  w->AddF32(a + "attention.layer_norm_rms_epsilon", 1e-6f);
  w->AddF32(a + "rope.freq_base", f.rope_base);
  if (f.head_dim != f.d / f.heads) {
    w->AddU32(a + "attention.key_length", static_cast<uint32_t>(f.head_dim));
    w->AddU32(a + "attention.value_length", static_cast<uint32_t>(f.head_dim));
  }
  if (f.original_context > 0)
    w->AddU32(a + "rope.scaling.original_context_length", f.original_context);
  if (f.attn_factor > 0.0f) w->AddF32(a + "rope.scaling.attn_factor", f.attn_factor);
  if (!f.scaling_type.empty()) w->AddString(a + "rope.scaling.type", f.scaling_type);
  if (f.scaling_factor > 0.0f) w->AddF32(a + "rope.scaling.factor", f.scaling_factor);
  if (f.sliding_window > 0) w->AddU32(a + "attention.sliding_window", f.sliding_window);
  if (f.attention_scale > 0.0f) w->AddF32(a + "attention.scale", f.attention_scale);
  if (f.rope_dims > 0) w->AddU32(a + "rope.dimension_count", f.rope_dims);
}

void AddLayer(const Family& f, int layer, GgufWriter* w) {
  const std::string p = "blk." + std::to_string(layer) + ".";
  const int64_t q = f.heads * f.head_dim, kv = f.kv_heads * f.head_dim;
  AddF32(w, p + "attn_norm.weight", {f.d}, 1.0f);
  if (f.fused_qkv) {
    AddF32(w, p + "attn_qkv.weight", {f.d, q + 2 * kv});
  } else {
    AddF32(w, p + "attn_q.weight", {f.d, q});
    AddF32(w, p + "attn_k.weight", {f.d, kv});
    AddF32(w, p + "attn_v.weight", {f.d, kv});
  }
  if (f.qkv_bias) {
    AddF32(w, p + "attn_q.bias", {q});
    AddF32(w, p + "attn_k.bias", {kv});
    AddF32(w, p + "attn_v.bias", {kv});
  }
  if (f.qk_norm) {
    AddF32(w, p + "attn_q_norm.weight", {f.head_dim}, 1.0f);
    AddF32(w, p + "attn_k_norm.weight", {f.head_dim}, 1.0f);
  }
  AddF32(w, p + "attn_output.weight", {q, f.d});
  AddF32(w, p + "ffn_norm.weight", {f.d}, 1.0f);
  if (f.arch == "gemma3") {  // the sandwich norms
    AddF32(w, p + "post_attention_norm.weight", {f.d}, 1.0f);
    AddF32(w, p + "post_ffw_norm.weight", {f.d}, 1.0f);
  }
  if (f.fused_gate_up) {
    AddF32(w, p + "ffn_up.weight", {f.d, 2 * f.ffn});
  } else {
    AddF32(w, p + "ffn_gate.weight", {f.d, f.ffn});
    AddF32(w, p + "ffn_up.weight", {f.d, f.ffn});
  }
  AddF32(w, p + "ffn_down.weight", {f.ffn, f.d});
}

// The model's file; `w` may hold keys already (a tokenizer).
std::vector<uint8_t> WriteFamily(const Family& f, GgufWriter* writer = nullptr) {
  GgufWriter own;
  GgufWriter& w = writer != nullptr ? *writer : own;
  AddMetadata(f, &w);
  AddF32(&w, "token_embd.weight", {f.d, f.vocab});
  if (f.rope_freqs) AddFactors(&w, "rope_freqs.weight", RopePairs(f), f.first_rope_factor);
  if (f.longrope) {
    AddFactors(&w, "rope_factors_long.weight", RopePairs(f), f.first_rope_factor + 10.0f);
    AddFactors(&w, "rope_factors_short.weight", RopePairs(f), f.first_rope_factor);
  }
  for (int layer = 0; layer < f.layers; ++layer) AddLayer(f, layer, &w);
  AddF32(&w, "output_norm.weight", {f.d}, 1.0f);
  if (f.untied) AddF32(&w, "output.weight", {f.d, f.vocab});
  return w.Serialize();
}

// A parsed family model and the plan built for it.
class Lowered {
 public:
  // Parses and builds; the status of the first step that failed.
  Status Build(const Family& f, int32_t context = 64, uint32_t fusions = 0, int32_t sinks = 0) {
    bytes_ = WriteFamily(f);
    STATICLM_RETURN_IF_ERROR(file_.Parse(bytes_.data(), bytes_.size()));
    STATICLM_RETURN_IF_ERROR(ReadModelConfig(file_, &config_));
    PlanLimits limits;
    limits.max_context = context;
    limits.prefill_chunk = 4;
    limits.kv_dtype = DType::kF32;
    if (sinks > 0) {
      limits.window = 16;
      limits.sinks = sinks;
    }
    ArenaReport arena;
    STATICLM_RETURN_IF_ERROR(BuildDecoderPlan(file_, config_, limits, fusions, &plan_, &arena));
    return Validate(plan_);
  }

  // The contract's validation, as a backend would run it, with placeholder buffers.
  static Status Validate(const Plan& plan) {
    static uint8_t placeholder[64];
    BufferBinding binding;
    for (int b = 0; b < kBufferCount; ++b) {
      binding.data[b] = placeholder;
      binding.bytes[b] = plan.buffer_bytes[b];
    }
    return ValidatePlan(plan, binding);
  }

  const Plan& plan() const { return plan_; }
  const ModelConfig& config() const { return config_; }
  const gguf::GgufFile& file() const { return file_; }
  const TensorRegion& Tensor(uint32_t index) const { return plan_.tensors[index]; }
  std::string Name(uint32_t index) const { return plan_.tensors[index].name; }
  std::vector<const Op*> Ops(OpKind kind) const {
    std::vector<const Op*> ops;
    for (const Op& op : plan_.ops) {
      if (op.kind == kind) ops.push_back(&op);
    }
    return ops;
  }
  // The products (single-weight matmuls of an unfused plan) whose weight is called `name`.
  const Op* ProductOf(const std::string& name) const {
    for (const Op& op : plan_.ops) {
      if (op.kind == OpKind::kMatMul && Name(op.inputs[1]) == name) return &op;
    }
    return nullptr;
  }

 private:
  std::vector<uint8_t> bytes_;
  gguf::GgufFile file_;
  ModelConfig config_;
  Plan plan_;
};

TEST(FamilyPlanTest, Qwen2AddsBiasesAfterTheProductsItsFusionJoins) {
  Family f;
  f.arch = "qwen2";
  f.qkv_bias = true;
  f.untied = true;
  Lowered m;
  ASSERT_TRUE(m.Build(f).ok());
  std::vector<const Op*> biases = m.Ops(OpKind::kAddBias);
  ASSERT_EQ(biases.size(), 3u * f.layers);
  for (int layer = 0; layer < f.layers; ++layer) {
    for (const char* t : {"attn_q", "attn_k", "attn_v"}) {
      const std::string prefix = "blk." + std::to_string(layer) + "." + t;
      const Op* product = m.ProductOf(prefix + ".weight");
      ASSERT_NE(product, nullptr) << prefix;
      int found = 0;
      for (const Op* b : biases) {
        if (m.Name(b->inputs[0]) != prefix + ".bias") continue;
        ++found;
        EXPECT_EQ(b->outputs[0], product->outputs[0]) << prefix;  // added to the product's output
      }
      EXPECT_EQ(found, 1) << prefix;
    }
  }
  for (const Op* rope : m.Ops(OpKind::kRope)) EXPECT_TRUE(rope->params.rope_halves);
  // The qkv fusion still joins the three products: the biases come after all of them.
  Lowered fused;
  ASSERT_TRUE(fused.Build(f, 64, kAllFusions).ok());
  int joined = 0;
  for (const Op* mm : fused.Ops(OpKind::kMatMul)) joined += mm->params.n_weights == 3 ? 1 : 0;
  EXPECT_EQ(joined, f.layers);
  EXPECT_EQ(fused.Ops(OpKind::kAddBias).size(), 3u * f.layers);
}

TEST(FamilyPlanTest, Qwen3NormalisesQAndKPerHeadWithoutBiases) {
  Family f;
  f.arch = "qwen3";
  f.qk_norm = true;
  f.head_dim = 32;  // not width / heads, as in Qwen 3
  Lowered m;
  ASSERT_TRUE(m.Build(f).ok());
  EXPECT_TRUE(m.Ops(OpKind::kAddBias).empty());
  int per_head = 0;
  for (const Op* norm : m.Ops(OpKind::kRmsNorm)) {
    if (norm->params.norm_group == 0) continue;
    EXPECT_EQ(norm->params.norm_group, 32);
    const std::string weight = m.Name(norm->inputs[1]);
    EXPECT_TRUE(weight.find("attn_q_norm") != std::string::npos ||
                weight.find("attn_k_norm") != std::string::npos)
        << weight;
    ++per_head;
  }
  EXPECT_EQ(per_head, 2 * f.layers);
  for (const Op* rope : m.Ops(OpKind::kRope)) EXPECT_EQ(rope->params.head_dim, 32);
}

TEST(FamilyPlanTest, Llama3RopeReadsItsFrequencyFactorsAndTheHeadIsTied) {
  Family f;
  f.rope_freqs = true;
  Lowered m;
  ASSERT_TRUE(m.Build(f).ok());
  std::vector<const Op*> ropes = m.Ops(OpKind::kRope);
  ASSERT_EQ(ropes.size(), 2u * f.layers);
  for (const Op* rope : ropes) {
    ASSERT_EQ(rope->n_inputs, 1);
    EXPECT_EQ(m.Name(rope->inputs[0]), "rope_freqs.weight");
    EXPECT_EQ(m.Tensor(rope->inputs[0]).elements(), f.head_dim / 2);
    EXPECT_FALSE(rope->params.rope_halves);  // Llama's converter permutes q and k
    EXPECT_EQ(rope->params.rope_scale, 1.0f);
  }
  // No output.weight: the logits come from the embedding table.
  const Op& head = m.plan().ops.back();
  ASSERT_EQ(head.kind, OpKind::kMatMul);
  EXPECT_EQ(m.Name(head.inputs[1]), "token_embd.weight");
  EXPECT_EQ(head.outputs[0], m.plan().logits_tensor);

  Family plain;  // without the tensor, plain RoPE
  Lowered p;
  ASSERT_TRUE(p.Build(plain).ok());
  for (const Op* rope : p.Ops(OpKind::kRope)) EXPECT_EQ(rope->n_inputs, 0);
}

Family Phi3() {
  Family f;
  f.arch = "phi3";
  f.untied = true;
  f.fused_qkv = true;
  f.fused_gate_up = true;
  f.longrope = true;
  f.original_context = 64;
  f.attn_factor = 1.25f;
  return f;
}

TEST(FamilyPlanTest, Phi3FusedTensorsAreRowViewsWithoutCopies) {
  const Family f = Phi3();
  Lowered m;
  ASSERT_TRUE(m.Build(f).ok());
  const uint64_t row = 4 * static_cast<uint64_t>(f.d);  // f32 rows of width d
  const int64_t q = f.heads * f.head_dim, kv = f.kv_heads * f.head_dim;
  for (int layer = 0; layer < f.layers; ++layer) {
    const std::string p = "blk." + std::to_string(layer) + ".";
    const Op* mq = m.ProductOf(p + "attn_qkv.weight[q]");
    const Op* mk = m.ProductOf(p + "attn_qkv.weight[k]");
    const Op* mv = m.ProductOf(p + "attn_qkv.weight[v]");
    const Op* gate = m.ProductOf(p + "ffn_up.weight[gate]");
    const Op* up = m.ProductOf(p + "ffn_up.weight[up]");
    ASSERT_TRUE(mq && mk && mv && gate && up) << p;
    const TensorRegion &wq = m.Tensor(mq->inputs[1]), &wk = m.Tensor(mk->inputs[1]),
                       &wv = m.Tensor(mv->inputs[1]);
    EXPECT_EQ(wq.buffer, BufferId::kWeights);
    EXPECT_EQ(wq.shape[0], q);
    EXPECT_EQ(wk.shape[0], kv);
    EXPECT_EQ(wv.shape[0], kv);
    EXPECT_EQ(wk.offset, wq.offset + static_cast<uint64_t>(q) * row);
    EXPECT_EQ(wv.offset, wk.offset + static_cast<uint64_t>(kv) * row);
    const TensorRegion &wg = m.Tensor(gate->inputs[1]), &wu = m.Tensor(up->inputs[1]);
    EXPECT_EQ(wg.shape[0], f.ffn);
    EXPECT_EQ(wu.shape[0], f.ffn);
    EXPECT_EQ(wu.offset, wg.offset + static_cast<uint64_t>(f.ffn) * row);  // gate rows first
  }
  // Nothing is copied: the weights buffer is the file's data section as it is.
  EXPECT_EQ(m.plan().buffer_bytes[static_cast<int>(BufferId::kWeights)],
            m.file().tensor_data_bytes());
  std::vector<const Op*> silu = m.Ops(OpKind::kSiluMul);
  EXPECT_EQ(silu.size(), static_cast<size_t>(f.layers));
}

TEST(FamilyPlanTest, Phi3UsesShortFactorsWithinTheOriginalContextAndLongBeyond) {
  const Family f = Phi3();
  for (int32_t context : {64, 128}) {
    Lowered m;
    ASSERT_TRUE(m.Build(f, context).ok()) << context;
    const char* expected = context > 64 ? "rope_factors_long.weight" : "rope_factors_short.weight";
    for (const Op* rope : m.Ops(OpKind::kRope)) {
      ASSERT_EQ(rope->n_inputs, 1);
      EXPECT_EQ(m.Name(rope->inputs[0]), expected) << context;
      EXPECT_EQ(rope->params.rope_scale, 1.25f);  // the attention factor scales cos and sin
      EXPECT_TRUE(rope->params.rope_halves);
    }
  }
}

// A plan file keeps the new op forms: the bias adds, the factor inputs and the RoPE scale.
TEST(FamilyPlanTest, PlanFileRoundTripKeepsTheFamilyOps) {
  Family f = Phi3();
  f.arch = "qwen2";  // qwen2's row with Phi-3's tensors: biases, a fused qkv and factors
  f.fused_gate_up = false;
  f.qkv_bias = true;
  Lowered m;
  ASSERT_TRUE(m.Build(f, 128, kAllFusions).ok());
  PlanFileContents saved;
  saved.n_plans = 1;
  saved.plans[0] = m.plan();
  std::snprintf(saved.backend, sizeof(saved.backend), "cpu");
  const std::string path = test::TempPath("family.plan");
  ASSERT_TRUE(SavePlanFile(path.c_str(), saved).ok());
  PlanFileContents loaded;
  ASSERT_TRUE(LoadPlanFile(path.c_str(), &loaded).ok());
  std::remove(path.c_str());
  EXPECT_EQ(HashPlan(loaded.plans[0]), HashPlan(m.plan()));
  int scaled = 0, biases = 0;
  for (const Op& op : loaded.plans[0].ops) {
    scaled += op.kind == OpKind::kRope && op.n_inputs == 1 && op.params.rope_scale == 1.25f;
    biases += op.kind == OpKind::kAddBias;
  }
  EXPECT_EQ(scaled, 2 * f.layers);
  EXPECT_EQ(biases, 3 * f.layers);
}

TEST(FamilyPlanTest, MistralWindowSlidesOnEveryLayer) {
  Family f;
  f.arch = "mistral";
  f.sliding_window = 8;
  f.layers = 3;
  Lowered m;
  ASSERT_TRUE(m.Build(f).ok());
  EXPECT_EQ(m.config().sliding_window, 8);
  EXPECT_EQ(m.config().sliding_window_pattern, 0);
  for (int layer = 0; layer < f.layers; ++layer) EXPECT_TRUE(m.config().LayerSlides(layer));
}

// The tiny Llama's tokenizer (tests/support/tiny_llama.cpp), so that the engine loads the file.
void AddTokenizer(GgufWriter* w) {
  const std::vector<std::string> tokens = test::TinyLlamaTokens();
  w->AddString("tokenizer.ggml.model", "gpt2");
  w->AddString("tokenizer.ggml.pre", "smollm");
  w->AddStringArray("tokenizer.ggml.tokens", tokens);
  w->AddArray("tokenizer.ggml.token_type", gguf::ValueType::kI32,
              std::vector<int32_t>(tokens.size(), 1));
  w->AddStringArray("tokenizer.ggml.merges", test::TinyLlamaMerges());
  w->AddU32("tokenizer.ggml.bos_token_id", 1);
  w->AddU32("tokenizer.ggml.eos_token_id", 2);
}

// Through the engine: a Mistral whose metadata gives a window gets a ring on every layer, with
// no --window option; a context within the window needs none; another window is refused.
TEST(FamilyPlanTest, EngineHonoursTheModelWindowOnEveryLayer) {
  Family f;
  f.arch = "mistral";
  f.layers = 3;
  f.sliding_window = 8;
  f.vocab = static_cast<int64_t>(test::TinyLlamaTokens().size());
  auto plan_memory = [&](const Family& family, int32_t context, int32_t window,
                         staticlm_memory* memory, std::string* error) {
    GgufWriter writer;
    AddTokenizer(&writer);
    const std::vector<uint8_t> model = WriteFamily(family, &writer);
    const std::string path = test::TempPath("family_window.gguf");
    EXPECT_TRUE(test::WriteBytes(path.c_str(), model).ok());
    staticlm_limits limits;
    staticlm_limits_default(&limits);
    limits.max_context = context;
    limits.prefill_chunk = 4;
    limits.window = window;
    char message[256] = {0};
    staticlm_status s =
        staticlm_plan_memory(path.c_str(), &limits, memory, message, sizeof(message));
    *error = message;
    std::remove(path.c_str());
    return s;
  };
  staticlm_memory memory;
  std::string error;
  ASSERT_EQ(plan_memory(f, 64, 0, &memory, &error), STATICLM_OK) << error;
  EXPECT_EQ(memory.kv_global_bytes, 0u);
  EXPECT_GT(memory.kv_ring_bytes, 0u);
  EXPECT_LT(memory.kv_cache_bytes, memory.kv_all_global_bytes);
  ASSERT_EQ(plan_memory(f, 8, 0, &memory, &error), STATICLM_OK) << error;
  EXPECT_EQ(memory.kv_ring_bytes, 0u);
  EXPECT_NE(plan_memory(f, 64, 16, &memory, &error), STATICLM_OK);
  EXPECT_NE(error.find("window of 8 tokens"), std::string::npos) << error;

  // llama.cpp's converter writes Mistral as "llama": the same window slides the same way.
  Family llama = f;
  llama.arch = "llama";
  ASSERT_EQ(plan_memory(llama, 64, 0, &memory, &error), STATICLM_OK) << error;
  EXPECT_EQ(memory.kv_global_bytes, 0u);
  EXPECT_GT(memory.kv_ring_bytes, 0u);
}

// A one-line error containing `needle`.
void ExpectOneLineError(const Status& s, const std::string& needle) {
  ASSERT_FALSE(s.ok());
  const std::string message = s.message();
  EXPECT_NE(message.find(needle), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

// The scores' scale: head_dim^-0.5; <arch>.attention.scale where the file has it; Gemma 3
// 27B's (width / heads)^-0.5, which its GGUF does not carry and which llama.cpp, too, takes
// from the layer count (62).
TEST(FamilyPlanTest, AttentionScaleFollowsTheKeyAndGemma3TwentySevenB) {
  auto scales = [](const Family& f) {
    Lowered m;
    EXPECT_TRUE(m.Build(f).ok());
    std::vector<float> out;
    for (const Op* op : m.Ops(OpKind::kAttention)) out.push_back(op->params.scale);
    EXPECT_EQ(out.size(), static_cast<size_t>(f.layers));
    return out;
  };
  Family llama;
  for (float s : scales(llama)) EXPECT_FLOAT_EQ(s, 0.25f);  // head_dim 16
  Family keyed;
  keyed.attention_scale = 0.125f;
  for (float s : scales(keyed)) EXPECT_FLOAT_EQ(s, 0.125f);
  Family gemma;  // width / heads 16, head_dim 32
  gemma.arch = "gemma3";
  gemma.qk_norm = true;
  gemma.head_dim = 32;
  gemma.layers = 6;
  for (float s : scales(gemma)) EXPECT_FLOAT_EQ(s, 1.0f / std::sqrt(32.0f));
  gemma.layers = 62;
  for (float s : scales(gemma)) EXPECT_FLOAT_EQ(s, 0.25f);
  gemma.attention_scale = 0.5f;
  for (float s : scales(gemma)) EXPECT_FLOAT_EQ(s, 0.5f);
}

TEST(FamilyPlanTest, UnknownArchitectureNamesTheFieldAndValue) {
  Family f;
  f.arch = "mamba";
  Lowered m;
  const Status s = m.Build(f);
  ExpectOneLineError(s, "general.architecture = 'mamba' is not supported");
  ExpectOneLineError(s, "qwen2, qwen3, phi3");
}

TEST(FamilyPlanTest, UnsupportedRopeScalingNamesTheFieldAndValue) {
  Family dynamic;
  dynamic.scaling_type = "dynamic";
  dynamic.scaling_factor = 4.0f;
  Lowered a;
  ExpectOneLineError(a.Build(dynamic), "llama.rope.scaling.type = dynamic is not supported");
  Family linear;  // linear needs its factor
  linear.arch = "qwen2";
  linear.qkv_bias = true;
  linear.scaling_type = "linear";
  Lowered b;
  ExpectOneLineError(b.Build(linear), "qwen2.rope.scaling.factor is missing");
  Family factor_only;
  factor_only.scaling_factor = 4.0f;
  Lowered c;
  ExpectOneLineError(c.Build(factor_only), "llama.rope.scaling.factor = 4 is not supported");
  Family yarn;  // YaRN places its ramp by the original context
  yarn.scaling_type = "yarn";
  yarn.scaling_factor = 4.0f;
  Lowered e;
  ExpectOneLineError(e.Build(yarn), "llama.rope.scaling.original_context_length is missing");
  Family below;
  below.scaling_type = "linear";
  below.scaling_factor = 0.5f;
  Lowered f;
  ExpectOneLineError(f.Build(below), "llama.rope.scaling.factor = 0.5 is out of range");
  for (float base : {1.0f, 0.0f, -5.0f}) {  // no frequencies below 1 (YaRN divides by ln base)
    Family bad_base;
    bad_base.rope_base = base;
    Lowered g;
    ExpectOneLineError(g.Build(bad_base), "llama.rope.freq_base = ");
  }
  Family none;  // "none" is no scaling
  none.scaling_type = "none";
  Lowered d;
  EXPECT_TRUE(d.Build(none).ok());
}

// Linear and YaRN factors are computed when the model loads (Model::Load adds them after the
// file's bytes); a plan built from the metadata alone is refused rather than left unscaled.
TEST(FamilyPlanTest, NumericRopeScalingWithoutItsFactorsIsRefused) {
  Family linear;
  linear.scaling_type = "linear";
  linear.scaling_factor = 4.0f;
  Lowered a;
  ExpectOneLineError(a.Build(linear), "rope_freqs.weight");
  Family with_tensor = linear;  // a file that holds them (as a folder's config gives them)
  with_tensor.rope_freqs = true;
  Lowered b;
  EXPECT_TRUE(b.Build(with_tensor).ok());
}

// Factors are checked; a sink cache's attention takes them too (it turns its queries back to
// their cache positions by the keys' frequencies), as its last input; other caches do not.
TEST(FamilyPlanTest, RopeFactorsAreCheckedAndReachSinkAttention) {
  Family zero;
  zero.rope_freqs = true;
  zero.first_rope_factor = 0.0f;
  Lowered a;
  ExpectOneLineError(a.Build(zero), "rope_freqs.weight");
  Family llama3;
  llama3.rope_freqs = true;
  Lowered sinks;
  ASSERT_TRUE(sinks.Build(llama3, 64, 0, 4).ok());
  for (const Op* op : sinks.Ops(OpKind::kAttention)) {
    const int factors = AttentionFactorsInput(*op);
    ASSERT_GE(factors, 0);
    EXPECT_EQ(sinks.Name(op->inputs[factors]), "rope_freqs.weight");
  }
  Lowered plain;
  ASSERT_TRUE(plain.Build(llama3).ok());
  for (const Op* op : plain.Ops(OpKind::kAttention)) EXPECT_EQ(AttentionFactorsInput(*op), -1);
  // The contract refuses factors outside the weights (a device backend reads them from the
  // host's weights) and on an attention of another cache.
  Plan moved = sinks.plan();
  const uint32_t factors = sinks.Ops(OpKind::kRope)[0]->inputs[0];
  moved.tensors[factors].buffer = BufferId::kArena;  // rope and attention both read it
  moved.tensors[factors].offset = 0;
  EXPECT_FALSE(Lowered::Validate(moved).ok());
  Plan extra = plain.plan();
  for (Op& op : extra.ops) {
    if (op.kind != OpKind::kAttention) continue;
    const Op& rope = *plain.Ops(OpKind::kRope)[0];
    op.inputs[op.n_inputs++] = rope.inputs[0];
    break;
  }
  EXPECT_FALSE(Lowered::Validate(extra).ok());
}

// Partial RoPE (<arch>.rope.dimension_count, Phi-4-mini's 96 of 128): the rope ops and a sink
// cache's attention carry the width, the factors are one per turned pair, and the whole head is
// still 0 (so earlier plans keep their hash). A width that is odd, zero or wider than the head
// is a one-line error naming the key; factors for the whole head do not fit a partial one.
TEST(FamilyPlanTest, PartialRopeReachesRopeAndSinkAttention) {
  Family f = Phi3();
  f.rope_dims = 12;  // of 16
  Lowered sinks;
  ASSERT_TRUE(sinks.Build(f, 64, 0, 4).ok());
  for (const Op* op : sinks.Ops(OpKind::kRope)) {
    EXPECT_EQ(op->params.rope_dims, 12);
    EXPECT_EQ(sinks.plan().tensors[op->inputs[0]].elements(), 6);
  }
  for (const Op* op : sinks.Ops(OpKind::kAttention)) EXPECT_EQ(op->params.rope_dims, 12);
  Lowered plain;
  ASSERT_TRUE(plain.Build(f).ok());
  for (const Op* op : plain.Ops(OpKind::kAttention)) EXPECT_EQ(op->params.rope_dims, 0);
  Family whole = Phi3();
  whole.rope_dims = 16;  // the key present, equal to the head: the whole-head form
  Lowered w;
  ASSERT_TRUE(w.Build(whole).ok());
  for (const Op* op : w.Ops(OpKind::kRope)) EXPECT_EQ(op->params.rope_dims, 0);
  for (uint32_t bad : {11u, 18u}) {
    Family b = Phi3();
    b.rope_dims = bad;
    b.longrope = false;
    Lowered m;
    ExpectOneLineError(m.Build(b), "phi3.rope.dimension_count = ");
  }
  Family mixed = Phi3();  // factors for the whole head (8) while RoPE turns 12 elements (6 pairs)
  mixed.rope_dims = 12;
  mixed.factor_count = 8;
  Lowered m;
  ExpectOneLineError(m.Build(mixed), "rope_factors_short.weight");
}

TEST(FamilyPlanTest, Phi3WithoutTheFusedTensorNamesIt) {
  Family f = Phi3();
  f.fused_gate_up = false;  // ffn_gate and a plain ffn_up: phi3's row wants ffn_up of 2 · ffn
  Lowered m;
  ExpectOneLineError(m.Build(f), "tensor 'blk.0.ffn_up.weight' has shape [64, 96]");
}

}  // namespace
}  // namespace staticlm
