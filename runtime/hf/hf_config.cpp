#include "runtime/hf/hf_config.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <tuple>

#include "runtime/hf/json_fields.h"
#include "runtime/hf/rope_tensors.h"
#include "runtime/model/architecture.h"
#include "runtime/model/rope_scaling.h"

namespace staticlm::hf {
namespace {

using ExtraTensorValues = std::vector<float>;

// HF model_type → GGUF architecture, as llama.cpp's converter maps them (Mistral's folders
// convert to "llama"), with what the family stores differently.
struct Family {
  const char* model_type;
  const char* arch;
  const char* activation;  // config.json's hidden_act
  bool qkv_bias;           // attention biases are part of the family (Qwen2)
  float norm_offset;
};
constexpr Family kFamilies[] = {
    {"llama", "llama", "silu", false, 0.0f},
    {"mistral", "llama", "silu", false, 0.0f},
    {"qwen2", "qwen2", "silu", true, 0.0f},
    {"qwen3", "qwen3", "silu", false, 0.0f},
    {"phi3", "phi3", "silu", false, 0.0f},
    {"gemma3_text", "gemma3", "gelu_pytorch_tanh", false, 1.0f},
};
constexpr int32_t kMaxSize = 1 << 24;

const Family* FindFamily(const std::string& model_type) {
  for (const Family& f : kFamilies) {
    if (model_type == f.model_type) return &f;
  }
  return nullptr;
}

class ConfigReader {
 public:
  ConfigReader(const Json& json, const char* file, HfConfig* config, GgufHeaderBuilder* header)
      : fields_(json, file), json_(json), file_(file), c_(*config), h_(*header) {}

  Status Read();

 private:
  // "<arch>.<key>" for the metadata.
  std::string Key(const char* key) const { return c_.arch + "." + key; }
  Status Size(const char* json_key, const char* gguf_key, int64_t* value);
  Status ReadFamily();
  Status ReadShape();
  Status ReadRope();
  Status ReadRopeScaling(const Json& scaling, const char* name);
  Status ReadPartialRotary(const JsonFields& fields);
  Status ReadLongrope(const Json& scaling, const JsonFields& s);
  Status AddScaling(const RopeScaling& r, const char* type);
  Status ReadYarn(const JsonFields& s, double factor);
  Status ReadRopePerLayerType(const Json& params);
  Status CheckLocalRopeBase(const char* key, double base);
  Status ReadLayerPattern(const Json& types);
  Status ReadWindow();
  Status CheckUnsupported();

  JsonFields fields_;
  const Json& json_;
  const char* file_;
  HfConfig& c_;
  GgufHeaderBuilder& h_;
  const Family* family_ = nullptr;
};

Status ConfigReader::Size(const char* json_key, const char* gguf_key, int64_t* value) {
  STATICLM_RETURN_IF_ERROR(fields_.Int(json_key, 1, kMaxSize, value));
  h_.AddU32(Key(gguf_key), static_cast<uint32_t>(*value));
  return Status::Ok();
}

Status ConfigReader::ReadFamily() {
  STATICLM_RETURN_IF_ERROR(fields_.String("model_type", &c_.model_type));
  family_ = FindFamily(c_.model_type);
  if (family_ == nullptr) {
    return Status::Error(StatusCode::kUnsupported,
                         "%s: key 'model_type' = '%.40s' is not supported (supported: llama, "
                         "mistral, qwen2, qwen3, phi3, gemma3_text)",
                         file_, c_.model_type.c_str());
  }
  c_.arch = family_->arch;
  c_.norm_offset = family_->norm_offset;
  h_.AddString("general.architecture", c_.arch);
  std::string act = family_->activation;
  STATICLM_RETURN_IF_ERROR(
      fields_.OptionalString(c_.arch == "gemma3" ? "hidden_activation" : "hidden_act", &act));
  if (act != family_->activation) {
    return Status::Error(StatusCode::kUnsupported, "%s: activation '%.40s' is not supported for %s",
                         file_, act.c_str(), c_.model_type.c_str());
  }
  return Status::Ok();
}

Status ConfigReader::ReadShape() {
  int64_t layers = 0, width = 0, heads = 0, ffn = 0, context = 0;
  STATICLM_RETURN_IF_ERROR(Size("num_hidden_layers", "block_count", &layers));
  STATICLM_RETURN_IF_ERROR(Size("hidden_size", "embedding_length", &width));
  STATICLM_RETURN_IF_ERROR(Size("intermediate_size", "feed_forward_length", &ffn));
  STATICLM_RETURN_IF_ERROR(Size("num_attention_heads", "attention.head_count", &heads));
  STATICLM_RETURN_IF_ERROR(Size("max_position_embeddings", "context_length", &context));
  int64_t vocab = 0;  // informational (the embedding table's rows are the vocabulary)
  STATICLM_RETURN_IF_ERROR(fields_.OptionalInt("vocab_size", 1, kMaxSize, &vocab));
  if (vocab > 0) h_.AddU32(Key("vocab_size"), static_cast<uint32_t>(vocab));
  int64_t kv_heads = heads;
  STATICLM_RETURN_IF_ERROR(fields_.OptionalInt("num_key_value_heads", 1, kMaxSize, &kv_heads));
  h_.AddU32(Key("attention.head_count_kv"), static_cast<uint32_t>(kv_heads));
  double eps = 0.0;
  STATICLM_RETURN_IF_ERROR(fields_.Float("rms_norm_eps", &eps));
  if (!(eps > 0.0)) return fields_.Fail("rms_norm_eps", "is not positive");
  h_.AddF32(Key("attention.layer_norm_rms_epsilon"), static_cast<float>(eps));
  int64_t head_dim = width / heads;
  if (fields_.Has("head_dim")) {
    STATICLM_RETURN_IF_ERROR(fields_.Int("head_dim", 1, kMaxSize, &head_dim));
    h_.AddU32(Key("attention.key_length"), static_cast<uint32_t>(head_dim));
    h_.AddU32(Key("attention.value_length"), static_cast<uint32_t>(head_dim));
  }
  c_.n_layers = static_cast<int32_t>(layers);
  c_.context_length = static_cast<int32_t>(context);
  c_.head_dim = static_cast<int32_t>(head_dim);
  c_.rope_dims = c_.head_dim;
  return ReadPartialRotary(fields_);
}

// partial_rotary_factor in `fields` (config.json's top level, or its rope parameters): RoPE
// turns the first int(head_dim × factor) elements of each head, as transformers computes it.
Status ConfigReader::ReadPartialRotary(const JsonFields& fields) {
  double partial = 1.0;
  if (!fields.Has("partial_rotary_factor")) return Status::Ok();
  STATICLM_RETURN_IF_ERROR(fields.Float("partial_rotary_factor", &partial));
  const int64_t dims = static_cast<int64_t>(static_cast<double>(c_.head_dim) * partial);
  if (!(partial > 0.0 && partial <= 1.0) || dims < 2 || dims % 2 != 0) {
    return fields.Fail("partial_rotary_factor",
                       "must turn an even number of each head's elements (0 < factor <= 1)");
  }
  c_.rope_dims = static_cast<int32_t>(dims);
  return Status::Ok();
}

// Phi-3's longrope: per-pair factors for short and long contexts, and the attention factor
// the converter derives from the context's growth over the original.
Status ConfigReader::ReadLongrope(const Json& scaling, const JsonFields& s) {
  const size_t pairs = static_cast<size_t>(c_.rope_dims / 2);
  for (const char* key : {"long_factor", "short_factor"}) {
    auto it = scaling.find(key);
    if (it == scaling.end() || !it->is_array() || it->size() != pairs) {
      return s.Fail(key,
                    "is not an array of one number per RoPE pair (head_dim × "
                    "partial_rotary_factor / 2)");
    }
    ExtraTensorValues values;
    for (const Json& v : *it) {
      if (!v.is_number() || !(v.get<double>() > 0.0))
        return s.Fail(key, "holds a non-positive or non-number");
      values.push_back(static_cast<float>(v.get<double>()));
    }
    c_.extra_tensors.push_back(
        {std::string("rope_factors_") + (key[0] == 'l' ? "long" : "short") + ".weight", values});
  }
  double original = 0.0;
  STATICLM_RETURN_IF_ERROR(fields_.OptionalFloat("original_max_position_embeddings", &original));
  STATICLM_RETURN_IF_ERROR(s.OptionalFloat("original_max_position_embeddings", &original));
  if (!(original >= 1.0))
    return s.Fail("original_max_position_embeddings", "is missing or below 1");
  h_.AddU32(Key("rope.scaling.original_context_length"), static_cast<uint32_t>(original));
  h_.AddF32(Key("rope.scaling.attn_factor"), LongropeAttnFactor(c_.context_length, original));
  return Status::Ok();
}

// Linear and YaRN as llama.cpp's converter writes them (type, factor, original context), with
// the frequency divisors as rope_freqs.weight, which the converter leaves to llama.cpp's kernel
// and staticlm computes once (runtime/model/rope_scaling.h).
Status ConfigReader::AddScaling(const RopeScaling& r, const char* type) {
  h_.AddString(Key("rope.scaling.type"), type);
  h_.AddF32(Key("rope.scaling.factor"), r.factor);
  if (r.original_context > 0) {
    h_.AddU32(Key("rope.scaling.original_context_length"),
              static_cast<uint32_t>(r.original_context));
  }
  c_.extra_tensors.push_back(
      {"rope_freqs.weight", RopeScalingFactors(r, c_.rope_base, c_.rope_dims)});
  return Status::Ok();
}

// YaRN as transformers' _compute_yarn_parameters reads it. Its attention factor (given, or
// from mscale / mscale_all_dim, else YaRN's magnitude) becomes rope.scaling.attn_factor
// divided by the magnitude, which ReadModelConfig multiplies back, as llama.cpp does.
Status ConfigReader::ReadYarn(const JsonFields& s, double factor) {
  RopeScaling r;
  r.kind = RopeScalingKind::kYarn;
  r.factor = static_cast<float>(factor);
  if (!(factor >= 1.0)) return s.Fail("factor", "is below 1 (YaRN)");
  double original = c_.context_length;  // transformers' order: top level, the dict, the model
  STATICLM_RETURN_IF_ERROR(s.OptionalFloat("original_max_position_embeddings", &original));
  STATICLM_RETURN_IF_ERROR(fields_.OptionalFloat("original_max_position_embeddings", &original));
  if (!(original >= 1.0 && original <= kMaxSize)) {
    return s.Fail("original_max_position_embeddings", "is out of range");
  }
  r.original_context = static_cast<int32_t>(original);
  double beta_fast = 32.0, beta_slow = 1.0, attention = 0.0, mscale = 0.0, mscale_all = 0.0;
  bool truncate = true;
  STATICLM_RETURN_IF_ERROR(s.OptionalFloat("beta_fast", &beta_fast));
  STATICLM_RETURN_IF_ERROR(s.OptionalFloat("beta_slow", &beta_slow));
  STATICLM_RETURN_IF_ERROR(s.OptionalFloat("attention_factor", &attention));
  STATICLM_RETURN_IF_ERROR(s.OptionalFloat("mscale", &mscale));
  STATICLM_RETURN_IF_ERROR(s.OptionalFloat("mscale_all_dim", &mscale_all));
  STATICLM_RETURN_IF_ERROR(s.OptionalBool("truncate", &truncate));
  if (!truncate) return s.Fail("truncate", "is false (not supported)");
  if (!(beta_fast > 0.0 && beta_slow > 0.0))
    return s.Fail("beta_fast", "or beta_slow is not positive");
  r.beta_fast = static_cast<float>(beta_fast);
  r.beta_slow = static_cast<float>(beta_slow);
  STATICLM_RETURN_IF_ERROR(AddScaling(r, "yarn"));
  h_.AddF32(Key("rope.scaling.yarn_beta_fast"), r.beta_fast);
  h_.AddF32(Key("rope.scaling.yarn_beta_slow"), r.beta_slow);
  const double magnitude = YarnMagnitude(r.factor);
  if (attention == 0.0 && mscale != 0.0 && mscale_all != 0.0) {
    attention = double(YarnMagnitude(r.factor, static_cast<float>(mscale))) /
                YarnMagnitude(r.factor, static_cast<float>(mscale_all));
  }
  if (attention != 0.0) {
    if (!(attention > 0.0 && attention < 100.0))
      return s.Fail("attention_factor", "is out of range");
    h_.AddF32(Key("rope.scaling.attn_factor"), static_cast<float>(attention / magnitude));
  }
  return Status::Ok();
}

Status ConfigReader::ReadRopeScaling(const Json& scaling, const char* name) {
  char prefix[64];
  std::snprintf(prefix, sizeof(prefix), "%s.", name);
  JsonFields s(scaling, file_, prefix);
  std::string type = "default";
  STATICLM_RETURN_IF_ERROR(s.OptionalString("type", &type));
  STATICLM_RETURN_IF_ERROR(s.OptionalString("rope_type", &type));
  double theta = c_.rope_base;
  STATICLM_RETURN_IF_ERROR(s.OptionalFloat("rope_theta", &theta));
  c_.rope_base = static_cast<float>(theta);
  STATICLM_RETURN_IF_ERROR(ReadPartialRotary(s));  // before the factors, one per pair it turns
  if (type == "default") return Status::Ok();
  if (type == "longrope" || type == "su") return ReadLongrope(scaling, s);
  double factor = 0.0;
  STATICLM_RETURN_IF_ERROR(s.Float("factor", &factor));
  if (!(factor > 0.0)) return s.Fail("factor", "is not positive");
  if (type == "llama3") {
    Llama3Scaling l3;
    l3.factor = factor;
    STATICLM_RETURN_IF_ERROR(s.OptionalFloat("low_freq_factor", &l3.low_freq_factor));
    STATICLM_RETURN_IF_ERROR(s.OptionalFloat("high_freq_factor", &l3.high_freq_factor));
    STATICLM_RETURN_IF_ERROR(
        s.OptionalFloat("original_max_position_embeddings", &l3.original_context));
    if (!(l3.high_freq_factor > l3.low_freq_factor) || !(l3.low_freq_factor > 0.0) ||
        !(l3.original_context > 0.0)) {
      return s.Fail("high_freq_factor", "must exceed low_freq_factor > 0 (and the context be > 0)");
    }
    c_.extra_tensors.push_back(
        {"rope_freqs.weight", Llama3RopeFreqs(l3, c_.rope_base, c_.rope_dims)});
    return Status::Ok();
  }
  if (type == "linear") {
    if (!(factor >= 1.0)) return s.Fail("factor", "is below 1 (linear)");
    RopeScaling linear;
    linear.kind = RopeScalingKind::kLinear;
    linear.factor = static_cast<float>(factor);
    return AddScaling(linear, "linear");
  }
  if (type == "yarn") return ReadYarn(s, factor);
  return Status::Error(StatusCode::kUnsupported, "%s: key '%srope_type' = '%.24s' is not supported",
                       file_, prefix, type.c_str());
}

// The sliding layers' RoPE base is the architecture row's constant (Gemma 3: 10,000); a config
// with another is refused rather than run with the wrong one.
Status ConfigReader::CheckLocalRopeBase(const char* key, double base) {
  const Architecture* arch = FindArchitecture(c_.arch);
  const double expected =
      arch != nullptr && arch->swa_rope_base > 0.0f ? arch->swa_rope_base : c_.rope_base;
  if (base != expected) {
    return Status::Error(StatusCode::kUnsupported,
                         "%s: key '%s' = %g is not supported for %s (only %g)", file_, key, base,
                         c_.model_type.c_str(), expected);
  }
  h_.AddF32(Key("rope.freq_base_swa"), static_cast<float>(base));  // as the converter
  return Status::Ok();
}

// transformers 5's Gemma 3: RoPE parameters per attention type. The global layers' are the
// model's; the sliding layers' base must be the family's.
Status ConfigReader::ReadRopePerLayerType(const Json& params) {
  JsonFields p(params, file_, "rope_parameters.");
  const Json* full = nullptr;
  const Json* sliding = nullptr;
  STATICLM_RETURN_IF_ERROR(p.OptionalObject("full_attention", &full));
  STATICLM_RETURN_IF_ERROR(p.OptionalObject("sliding_attention", &sliding));
  STATICLM_RETURN_IF_ERROR(ReadRopeScaling(*full, "rope_parameters.full_attention"));
  if (sliding == nullptr) return Status::Ok();
  JsonFields s(*sliding, file_, "rope_parameters.sliding_attention.");
  std::string type = "default";
  STATICLM_RETURN_IF_ERROR(s.OptionalString("rope_type", &type));
  if (type != "default") return s.Fail("rope_type", "is not 'default' (not supported)");
  double local = 10000.0;
  STATICLM_RETURN_IF_ERROR(s.OptionalFloat("rope_theta", &local));
  return CheckLocalRopeBase("rope_parameters.sliding_attention.rope_theta", local);
}

// transformers 4 writes rope_theta and rope_scaling at the top; transformers 5 writes
// rope_parameters {rope_theta, rope_type, …}.
Status ConfigReader::ReadRope() {
  double theta = c_.arch == "gemma3" ? 1000000.0 : 10000.0;
  STATICLM_RETURN_IF_ERROR(fields_.OptionalFloat("rope_theta", &theta));
  c_.rope_base = static_cast<float>(theta);
  for (const char* name : {"rope_parameters", "rope_scaling"}) {  // the newer one first
    const Json* scaling = nullptr;
    STATICLM_RETURN_IF_ERROR(fields_.OptionalObject(name, &scaling));
    if (scaling == nullptr) continue;
    if (scaling->contains("full_attention")) {
      STATICLM_RETURN_IF_ERROR(ReadRopePerLayerType(*scaling));
    } else {
      STATICLM_RETURN_IF_ERROR(ReadRopeScaling(*scaling, name));
    }
    break;
  }
  double local = 0.0;  // transformers 4's Gemma 3 key for the sliding layers' base
  STATICLM_RETURN_IF_ERROR(fields_.OptionalFloat("rope_local_base_freq", &local));
  if (local > 0.0) STATICLM_RETURN_IF_ERROR(CheckLocalRopeBase("rope_local_base_freq", local));
  if (!(c_.rope_base > 0.0f)) return fields_.Fail("rope_theta", "is not positive");
  h_.AddF32(Key("rope.freq_base"), c_.rope_base);
  h_.AddU32(Key("rope.dimension_count"), static_cast<uint32_t>(c_.rope_dims));
  return Status::Ok();
}

Status ConfigReader::ReadWindow() {
  bool use_window = true;  // Qwen2 has a window in its config that it does not use
  STATICLM_RETURN_IF_ERROR(fields_.OptionalBool("use_sliding_window", &use_window));
  int64_t window = 0;
  STATICLM_RETURN_IF_ERROR(fields_.OptionalInt("sliding_window", 0, kMaxSize, &window));
  if (!use_window || window == 0) return Status::Ok();
  h_.AddU32(Key("attention.sliding_window"), static_cast<uint32_t>(window));
  auto types = json_.find("layer_types");
  if (types != json_.end() && !types->is_null()) return ReadLayerPattern(*types);
  int64_t pattern = 0;
  STATICLM_RETURN_IF_ERROR(fields_.OptionalInt("sliding_window_pattern", 0, kMaxSize, &pattern));
  if (pattern > 0)
    h_.AddU32(Key("attention.sliding_window_pattern"), static_cast<uint32_t>(pattern));
  return Status::Ok();
}

// layer_types (transformers 5): which layers slide. staticlm runs "every P-th layer global"
// (P = 0: every layer slides); any other arrangement is refused.
Status ConfigReader::ReadLayerPattern(const Json& types) {
  if (!types.is_array() || types.size() != static_cast<size_t>(c_.n_layers)) {
    return fields_.Fail("layer_types", "is not an array with one entry per layer");
  }
  int pattern = 0;
  for (size_t i = 0; i < types.size(); ++i) {
    if (!types[i].is_string()) return fields_.Fail("layer_types", "holds a non-string");
    const std::string t = types[i].get<std::string>();
    if (t != "full_attention" && t != "sliding_attention") {
      return fields_.Fail("layer_types", "holds a type other than full_ or sliding_attention");
    }
    if (t == "full_attention" && pattern == 0) pattern = static_cast<int>(i) + 1;
  }
  for (size_t i = 0; i < types.size(); ++i) {
    const bool full = types[i].get<std::string>() == "full_attention";
    if (full != (pattern > 0 && (i + 1) % static_cast<size_t>(pattern) == 0)) {
      return Status::Error(StatusCode::kUnsupported,
                           "%s: key 'layer_types' is not every %d-th layer global (not supported)",
                           file_, pattern);
    }
  }
  h_.AddU32(Key("attention.sliding_window_pattern"), static_cast<uint32_t>(pattern));
  return Status::Ok();
}

// Settings that change the computation in ways the architecture row does not: refused by
// name rather than ignored.
Status ConfigReader::CheckUnsupported() {
  bool attention_bias = family_->qkv_bias, mlp_bias = false;
  STATICLM_RETURN_IF_ERROR(fields_.OptionalBool("attention_bias", &attention_bias));
  STATICLM_RETURN_IF_ERROR(fields_.OptionalBool("mlp_bias", &mlp_bias));
  for (auto [key, value, supported] :
       {std::tuple{"attention_bias", attention_bias, family_->qkv_bias},
        std::tuple{"mlp_bias", mlp_bias, false}}) {
    if (value != supported) {
      return Status::Error(StatusCode::kUnsupported, "%s: key '%s' = %s is not supported for %s",
                           file_, key, value ? "true" : "false", c_.model_type.c_str());
    }
  }
  STATICLM_RETURN_IF_ERROR(fields_.OptionalBool("tie_word_embeddings", &c_.tied_embeddings));
  for (const char* key : {"final_logit_softcapping", "attn_logit_softcapping"}) {
    if (fields_.Has(key)) return fields_.Fail(key, "is set (softcapping is not supported)");
  }
  bool bidirectional = false;
  STATICLM_RETURN_IF_ERROR(fields_.OptionalBool("use_bidirectional_attention", &bidirectional));
  if (bidirectional) return fields_.Fail("use_bidirectional_attention", "= true is not supported");
  // Gemma 3 scales scores by query_pre_attn_scalar^-0.5 (transformers' default 256; Gemma 3
  // 27B's is width / heads, not head_dim), written as <arch>.attention.scale.
  if (c_.arch != "gemma3") return Status::Ok();
  int64_t scalar = 256;
  STATICLM_RETURN_IF_ERROR(fields_.OptionalInt("query_pre_attn_scalar", 1, kMaxSize, &scalar));
  h_.AddF32(Key("attention.scale"), 1.0f / std::sqrt(static_cast<float>(scalar)));
  return Status::Ok();
}

Status ConfigReader::Read() {
  if (!json_.is_object()) {
    return Status::Error(StatusCode::kFormatError, "%s: is %s, not a JSON object", file_,
                         JsonTypeName(json_));
  }
  STATICLM_RETURN_IF_ERROR(ReadFamily());
  STATICLM_RETURN_IF_ERROR(ReadShape());
  STATICLM_RETURN_IF_ERROR(ReadRope());
  STATICLM_RETURN_IF_ERROR(ReadWindow());
  return CheckUnsupported();
}

}  // namespace

Status ReadHfConfig(std::string_view text, const char* file, HfConfig* config,
                    GgufHeaderBuilder* header) {
  Json json;
  STATICLM_RETURN_IF_ERROR(ParseJson(text, file, &json));
  *config = HfConfig{};
  ConfigReader reader(json, file, config, header);
  return reader.Read();
}

}  // namespace staticlm::hf
