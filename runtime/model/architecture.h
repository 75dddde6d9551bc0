// What differs between the decoder families staticlm runs, as data: one row per GGUF
// general.architecture. The plan builder (runtime/plan/decoder_plan_builder.cpp) lowers every
// model through these fields, so adding a family is a row here, plus a plan-builder case only
// for a feature no row has yet. Semantics follow transformers' modelling code for each family
// (the oracle of the golden tests) and llama.cpp's graph for the GGUF conventions.
#pragma once

#include <cstdint>
#include <string_view>

namespace staticlm {

enum class FfnActivation : uint8_t {
  kSilu,      // SwiGLU: down(silu(gate(x)) · up(x))
  kGeluTanh,  // GeGLU: down(gelu_tanh(gate(x)) · up(x))
};

struct Architecture {
  const char* name;  // general.architecture, also the prefix of the model's metadata keys
  // Embedding rows are multiplied by sqrt(d) (Gemma: transformers' scaled embedding).
  bool scale_embeddings;
  // q and k are RMS-normalised per head before RoPE (attn_q_norm, attn_k_norm weights).
  bool qk_norm;
  // The attention and FFN outputs are RMS-normalised before their residual adds
  // (post_attention_norm, post_ffw_norm; Gemma 2 and 3's "sandwich" norms).
  bool post_norms;
  FfnActivation activation;
  // RoPE rotates halves (x[i], x[i + d/2]): the GGUF converter did not permute q and k rows.
  bool rope_halves;
  // Sliding-window layers, when the metadata gives a window: every swa_pattern-th layer is
  // global and the rest slide (0: the family has no intrinsic pattern). Their RoPE base is
  // swa_rope_base (0: the global base); neither is in Gemma 3's GGUF metadata, both are the
  // family's constants in transformers and llama.cpp.
  int32_t swa_pattern;
  float swa_rope_base;
  // q, k and v products add a bias (attn_q.bias, attn_k.bias, attn_v.bias: Qwen 2).
  bool qkv_bias;
  // ffn_up holds the gate's rows, then the up projection's ([2 · ffn, d]: Phi-3's gate_up_proj),
  // and there is no ffn_gate. (A fused attn_qkv, [q + 2 · kv, d], is taken in any family when
  // the file has one: llama.cpp's converter writes Phi-3's so.) Both are lowered as views of
  // the fused tensor's rows, no copies.
  bool fused_gate_up;
  // A model of this many layers scales attention scores by (width / heads)^-0.5 instead of
  // head_dim^-0.5 (0: none does): Gemma 3 27B's query_pre_attn_scalar, which its GGUF does not
  // carry; llama.cpp tells that model by its layer count the same way. <arch>.attention.scale,
  // where a file has it, overrides both.
  int32_t width_scaled_layers;
};

// The row for `name`, or nullptr when staticlm does not run that architecture.
const Architecture* FindArchitecture(std::string_view name);

// The supported names, comma-separated, for error messages ("llama, mistral, ...").
const char* SupportedArchitectureNames();

}  // namespace staticlm
