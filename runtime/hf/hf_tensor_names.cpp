#include "runtime/hf/hf_tensor_names.h"

namespace staticlm::hf {
namespace {

struct NamePair {
  const char* hf;
  const char* gguf;
};

// Inside "model.layers.N.", before ".weight" / ".bias".
constexpr NamePair kLayerNames[] = {
    {"input_layernorm", "attn_norm"},
    {"self_attn.q_proj", "attn_q"},
    {"self_attn.k_proj", "attn_k"},
    {"self_attn.v_proj", "attn_v"},
    {"self_attn.o_proj", "attn_output"},
    {"self_attn.qkv_proj", "attn_qkv"},
    {"self_attn.q_norm", "attn_q_norm"},
    {"self_attn.k_norm", "attn_k_norm"},
    {"post_attention_layernorm", "ffn_norm"},
    {"mlp.gate_proj", "ffn_gate"},
    {"mlp.up_proj", "ffn_up"},
    {"mlp.down_proj", "ffn_down"},
    {"mlp.gate_up_proj", "ffn_up"},
};
// Gemma 3's sandwich norms: its post_attention_layernorm is not the FFN's input norm.
constexpr NamePair kGemma3LayerNames[] = {
    {"post_attention_layernorm", "post_attention_norm"},
    {"pre_feedforward_layernorm", "ffn_norm"},
    {"post_feedforward_layernorm", "post_ffw_norm"},
};
constexpr NamePair kGlobalNames[] = {
    {"model.embed_tokens.weight", "token_embd.weight"},
    {"model.norm.weight", "output_norm.weight"},
    {"lm_head.weight", "output.weight"},
};

bool StartsWith(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}

const char* FindLayerName(std::string_view part, std::string_view arch) {
  if (arch == "gemma3") {
    for (const NamePair& p : kGemma3LayerNames) {
      if (part == p.hf) return p.gguf;
    }
  }
  for (const NamePair& p : kLayerNames) {
    if (part == p.hf) return p.gguf;
  }
  return nullptr;
}

}  // namespace

TensorNameMatch MapTensorName(std::string_view hf, std::string_view arch, std::string* gguf) {
  for (const NamePair& p : kGlobalNames) {
    if (hf == p.hf) {
      *gguf = p.gguf;
      return TensorNameMatch::kMapped;
    }
  }
  constexpr std::string_view kLayers = "model.layers.";
  if (!StartsWith(hf, kLayers)) return TensorNameMatch::kUnknown;
  std::string_view rest = hf.substr(kLayers.size());
  size_t digits = 0;
  while (digits < rest.size() && digits < 6 && rest[digits] >= '0' && rest[digits] <= '9') {
    ++digits;
  }
  if (digits == 0 || digits >= rest.size() || rest[digits] != '.') return TensorNameMatch::kUnknown;
  std::string_view layer = rest.substr(0, digits), part = rest.substr(digits + 1);
  if (part == "self_attn.rotary_emb.inv_freq") return TensorNameMatch::kIgnored;
  std::string_view suffix;
  for (std::string_view s : {std::string_view(".weight"), std::string_view(".bias")}) {
    if (part.size() > s.size() && part.substr(part.size() - s.size()) == s) suffix = s;
  }
  if (suffix.empty()) return TensorNameMatch::kUnknown;
  const char* base = FindLayerName(part.substr(0, part.size() - suffix.size()), arch);
  if (base == nullptr) return TensorNameMatch::kUnknown;
  gguf->assign("blk.").append(layer).append(".").append(base).append(suffix);
  return TensorNameMatch::kMapped;
}

}  // namespace staticlm::hf
