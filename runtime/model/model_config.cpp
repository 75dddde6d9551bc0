#include "runtime/model/model_config.h"

#include <cmath>
#include <cstdio>
#include <string_view>

#include "runtime/gguf/gguf_file.h"

namespace staticlm {
namespace {

Status ReadPositive(const gguf::GgufFile& file, const char* key, int32_t* out) {
  uint32_t value = 0;
  STATICLM_RETURN_IF_ERROR(file.GetU32(key, &value));
  if (value == 0 || value > (1u << 24)) {
    return Status::Error(StatusCode::kFormatError, "%s = %u is out of range", key, value);
  }
  *out = static_cast<int32_t>(value);
  return Status::Ok();
}

Status CheckConsistency(const ModelConfig& c) {
  if (c.n_heads % c.n_kv_heads != 0) {
    return Status::Error(StatusCode::kFormatError,
                         "head count %d is not a multiple of KV head count %d", c.n_heads,
                         c.n_kv_heads);
  }
  if (c.head_dim % 2 != 0 || c.head_dim > 256) {
    return Status::Error(StatusCode::kUnsupported, "head size %d is not even and at most 256",
                         c.head_dim);
  }
  if (!(c.rope_base > 0.0f) || !(c.rms_eps > 0.0f)) {
    return Status::Error(StatusCode::kFormatError, "rope base or RMS epsilon is not positive");
  }
  return Status::Ok();
}

// "<arch>.<key>" into `out`.
const char* Key(const ModelConfig& c, const char* key, char* out, size_t capacity) {
  std::snprintf(out, capacity, "%s.%s", c.arch->name, key);
  return out;
}

Status ReadOptionalU32(const gguf::GgufFile& file, const char* key, int32_t* out) {
  if (file.FindKey(key) == nullptr) return Status::Ok();
  uint32_t value = 0;
  STATICLM_RETURN_IF_ERROR(file.GetU32(key, &value));
  if (value > (1u << 24)) {
    return Status::Error(StatusCode::kFormatError, "%s = %u is out of range", key, value);
  }
  *out = static_cast<int32_t>(value);
  return Status::Ok();
}

Status ReadArchitecture(const gguf::GgufFile& file, ModelConfig* c) {
  std::string_view name;
  STATICLM_RETURN_IF_ERROR(file.GetString("general.architecture", &name));
  c->arch = FindArchitecture(name);
  if (c->arch == nullptr) {
    return Status::Error(StatusCode::kUnsupported,
                         "general.architecture = '%.*s' is not supported (supported: %s)",
                         static_cast<int>(name.size() > 40 ? 40 : name.size()), name.data(),
                         SupportedArchitectureNames());
  }
  return Status::Ok();
}

// Hyperparameters every family has, under the architecture's prefix.
Status ReadShape(const gguf::GgufFile& file, ModelConfig* c) {
  char k[96];
  STATICLM_RETURN_IF_ERROR(ReadPositive(file, Key(*c, "block_count", k, sizeof(k)), &c->n_layers));
  STATICLM_RETURN_IF_ERROR(
      ReadPositive(file, Key(*c, "embedding_length", k, sizeof(k)), &c->width));
  STATICLM_RETURN_IF_ERROR(
      ReadPositive(file, Key(*c, "attention.head_count", k, sizeof(k)), &c->n_heads));
  STATICLM_RETURN_IF_ERROR(
      ReadPositive(file, Key(*c, "attention.head_count_kv", k, sizeof(k)), &c->n_kv_heads));
  STATICLM_RETURN_IF_ERROR(
      ReadPositive(file, Key(*c, "feed_forward_length", k, sizeof(k)), &c->ffn_width));
  STATICLM_RETURN_IF_ERROR(
      ReadPositive(file, Key(*c, "context_length", k, sizeof(k)), &c->context_length));
  if (file.FindKey(Key(*c, "rope.freq_base", k, sizeof(k))) != nullptr) {
    STATICLM_RETURN_IF_ERROR(file.GetF32(k, &c->rope_base));
    if (!(c->rope_base > 1.0f && c->rope_base < 1e12f)) {  // frequencies base^(-2i/d) < 1
      return Status::Error(StatusCode::kFormatError, "%s = %g is out of range (1 to 1e12)", k,
                           c->rope_base);
    }
  }
  STATICLM_RETURN_IF_ERROR(
      file.GetF32(Key(*c, "attention.layer_norm_rms_epsilon", k, sizeof(k)), &c->rms_eps));
  if (file.FindKey(Key(*c, "attention.key_length", k, sizeof(k))) == nullptr) {
    if (c->width % c->n_heads != 0) {
      return Status::Error(StatusCode::kFormatError,
                           "embedding length %d is not a multiple of head count %d", c->width,
                           c->n_heads);
    }
    c->head_dim = c->width / c->n_heads;
  } else {
    STATICLM_RETURN_IF_ERROR(ReadPositive(file, k, &c->head_dim));
    int32_t value_length = c->head_dim;
    STATICLM_RETURN_IF_ERROR(
        ReadOptionalU32(file, Key(*c, "attention.value_length", k, sizeof(k)), &value_length));
    if (value_length != c->head_dim) {
      return Status::Error(StatusCode::kUnsupported,
                           "key length %d and value length %d differ (not supported)", c->head_dim,
                           value_length);
    }
  }
  return Status::Ok();
}

// Partial RoPE: <arch>.rope.dimension_count, the elements of each head RoPE turns (Phi-4-mini's
// partial_rotary_factor 0.75: 96 of 128); absent, the whole head.
Status ReadRopeDims(const gguf::GgufFile& file, ModelConfig* c) {
  char k[96];
  c->rope_dims = c->head_dim;
  if (file.FindKey(Key(*c, "rope.dimension_count", k, sizeof(k))) == nullptr) return Status::Ok();
  uint32_t rope_dims = 0;
  STATICLM_RETURN_IF_ERROR(file.GetU32(k, &rope_dims));
  if (rope_dims < 2 || rope_dims % 2 != 0 || rope_dims > static_cast<uint32_t>(c->head_dim)) {
    return Status::Error(StatusCode::kFormatError,
                         "%s = %u is not an even number from 2 to the head size %d", k, rope_dims,
                         c->head_dim);
  }
  c->rope_dims = static_cast<int32_t>(rope_dims);
  return Status::Ok();
}

// What staticlm does not run yet is refused by name rather than computed wrongly.
Status CheckFeatures(const gguf::GgufFile& file, const ModelConfig& c) {
  char k[96];
  for (const char* key : {"attn_logit_softcapping", "final_logit_softcapping"}) {
    if (file.FindKey(Key(c, key, k, sizeof(k))) != nullptr) {
      return Status::Error(StatusCode::kUnsupported, "%s is not supported yet", k);
    }
  }
  return Status::Ok();
}

// The RoPE scaling the metadata names: none; longrope (Phi-3; its factors are tensors); linear
// or YaRN, whose factors Model::Load computes (rope_scaling.h). The rest would compute another
// model, so they are refused by value. Llama 3's scaling has no key: llama.cpp's converter
// stores it as rope_freqs.weight.
Status ReadRopeScalingKind(const gguf::GgufFile& file, ModelConfig* c, std::string_view* type) {
  char k[96];
  *type = "none";
  if (file.FindKey(Key(*c, "rope.scaling.type", k, sizeof(k))) == nullptr) return Status::Ok();
  STATICLM_RETURN_IF_ERROR(file.GetString(k, type));
  if (*type == "linear") {
    c->rope_scaling.kind = RopeScalingKind::kLinear;
  } else if (*type == "yarn") {
    c->rope_scaling.kind = RopeScalingKind::kYarn;
  } else if (*type != "none" && *type != "longrope") {
    return Status::Error(StatusCode::kUnsupported,
                         "%s = %.*s is not supported (supported: none, linear, yarn, longrope)", k,
                         static_cast<int>(type->size() > 40 ? 40 : type->size()), type->data());
  }
  return Status::Ok();
}

// An optional f32 key that must lie in (lo, hi).
Status ReadOptionalF32InRange(const gguf::GgufFile& file, const char* key, float lo, float hi,
                              float* out) {
  if (file.FindKey(key) == nullptr) return Status::Ok();
  STATICLM_RETURN_IF_ERROR(file.GetF32(key, out));
  if (!(*out > lo && *out < hi)) {
    return Status::Error(StatusCode::kFormatError, "%s = %g is out of range", key, *out);
  }
  return Status::Ok();
}

// YaRN's keys beyond the factor, as llama.cpp reads them; an extrapolation mix other than
// YaRN's own (ext_factor 1) or a log multiplier (DeepSeek's) would compute another model.
Status ReadYarn(const gguf::GgufFile& file, ModelConfig* c) {
  char k[96];
  RopeScaling& s = c->rope_scaling;
  STATICLM_RETURN_IF_ERROR(ReadOptionalF32InRange(
      file, Key(*c, "rope.scaling.yarn_beta_fast", k, sizeof(k)), 0.0f, 1e6f, &s.beta_fast));
  STATICLM_RETURN_IF_ERROR(ReadOptionalF32InRange(
      file, Key(*c, "rope.scaling.yarn_beta_slow", k, sizeof(k)), 0.0f, 1e6f, &s.beta_slow));
  float ext = 1.0f, attn = 1.0f;
  STATICLM_RETURN_IF_ERROR(ReadOptionalF32InRange(
      file, Key(*c, "rope.scaling.yarn_ext_factor", k, sizeof(k)), -1e6f, 1e6f, &ext));
  if (ext != 1.0f) {
    return Status::Error(StatusCode::kUnsupported, "%s = %g is not supported (only 1)", k, ext);
  }
  if (file.FindKey(Key(*c, "rope.scaling.yarn_log_multiplier", k, sizeof(k))) != nullptr) {
    return Status::Error(StatusCode::kUnsupported, "%s is not supported", k);
  }
  STATICLM_RETURN_IF_ERROR(ReadOptionalF32InRange(
      file, Key(*c, "rope.scaling.yarn_attn_factor", k, sizeof(k)), 0.0f, 100.0f, &attn));
  if (c->rope_scaling.original_context <= 0) {
    return Status::Error(StatusCode::kFormatError, "%s is missing (YaRN needs it)",
                         Key(*c, "rope.scaling.original_context_length", k, sizeof(k)));
  }
  c->rope_attn_factor *= attn * YarnMagnitude(s.factor);
  return Status::Ok();
}

Status ReadRopeScaling(const gguf::GgufFile& file, ModelConfig* c) {
  char k[96];
  std::string_view type;
  STATICLM_RETURN_IF_ERROR(ReadRopeScalingKind(file, c, &type));
  const bool numeric = c->rope_scaling.kind != RopeScalingKind::kNone;
  if (file.FindKey(Key(*c, "rope.scaling.factor", k, sizeof(k))) != nullptr) {
    float factor = 0.0f;
    STATICLM_RETURN_IF_ERROR(file.GetF32(k, &factor));
    if (numeric) {
      if (!(factor >= 1.0f && factor < 1e6f)) {
        return Status::Error(StatusCode::kFormatError, "%s = %g is out of range (1 to 1e6)", k,
                             factor);
      }
      c->rope_scaling.factor = factor;
    } else if (factor != 1.0f && type != "longrope") {
      return Status::Error(StatusCode::kUnsupported,
                           "%s = %g is not supported (rope scaling type %.*s)", k, factor,
                           static_cast<int>(type.size()), type.data());
    }
  } else if (numeric) {
    return Status::Error(StatusCode::kFormatError, "%s is missing (rope scaling type %.*s)", k,
                         static_cast<int>(type.size()), type.data());
  }
  STATICLM_RETURN_IF_ERROR(
      ReadOptionalU32(file, Key(*c, "rope.scaling.original_context_length", k, sizeof(k)),
                      &c->rope_scaling.original_context));
  STATICLM_RETURN_IF_ERROR(ReadOptionalF32InRange(
      file, Key(*c, "rope.scaling.attn_factor", k, sizeof(k)), 0.0f, 100.0f, &c->rope_attn_factor));
  if (c->rope_scaling.kind == RopeScalingKind::kYarn) return ReadYarn(file, c);
  return Status::Ok();
}

Status ReadAttentionScale(const gguf::GgufFile& file, ModelConfig* c) {
  const bool width_scaled =
      c->arch->width_scaled_layers > 0 && c->n_layers == c->arch->width_scaled_layers;
  const int32_t scaled_by = width_scaled ? c->width / c->n_heads : c->head_dim;
  c->attention_scale = 1.0f / std::sqrt(static_cast<float>(scaled_by));
  char k[96];
  return ReadOptionalF32InRange(file, Key(*c, "attention.scale", k, sizeof(k)), 0.0f, 100.0f,
                                &c->attention_scale);
}

Status ReadWindow(const gguf::GgufFile& file, ModelConfig* c) {
  char k[96];
  STATICLM_RETURN_IF_ERROR(
      ReadOptionalU32(file, Key(*c, "attention.sliding_window", k, sizeof(k)), &c->sliding_window));
  c->sliding_window_pattern = c->arch->swa_pattern;
  return ReadOptionalU32(file, Key(*c, "attention.sliding_window_pattern", k, sizeof(k)),
                         &c->sliding_window_pattern);
}

}  // namespace

Status ReadModelConfig(const gguf::GgufFile& file, ModelConfig* config) {
  ModelConfig c;
  STATICLM_RETURN_IF_ERROR(ReadArchitecture(file, &c));
  STATICLM_RETURN_IF_ERROR(ReadShape(file, &c));
  STATICLM_RETURN_IF_ERROR(CheckConsistency(c));
  STATICLM_RETURN_IF_ERROR(CheckFeatures(file, c));
  STATICLM_RETURN_IF_ERROR(ReadRopeDims(file, &c));
  STATICLM_RETURN_IF_ERROR(ReadRopeScaling(file, &c));
  STATICLM_RETURN_IF_ERROR(ReadAttentionScale(file, &c));
  STATICLM_RETURN_IF_ERROR(ReadWindow(file, &c));
  // The vocabulary size is the embedding table's row count; the metadata key is optional.
  const gguf::TensorInfo* embd = file.FindTensor("token_embd.weight");
  if (embd == nullptr) {
    return Status::Error(StatusCode::kFormatError, "missing tensor 'token_embd.weight'");
  }
  if (embd->n_dims != 2 || embd->ne[0] != c.width || embd->ne[1] <= 0 || embd->ne[1] > (1 << 24)) {
    return Status::Error(StatusCode::kFormatError, "token_embd.weight has shape [%lld, %lld]",
                         static_cast<long long>(embd->ne[0]), static_cast<long long>(embd->ne[1]));
  }
  c.vocab_size = static_cast<int32_t>(embd->ne[1]);
  c.rope_halves = c.arch->rope_halves;
  *config = c;
  return Status::Ok();
}

}  // namespace staticlm
