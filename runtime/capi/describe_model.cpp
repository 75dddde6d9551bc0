// staticlm_describe_model: the text `staticlm inspect` prints about a model file.
#include <cstdio>
#include <cstring>

#include "platform/text_sink.h"
#include "runtime/gguf/gguf_file.h"
#include "runtime/hf/hf_folder.h"
#include "runtime/model/model_config.h"
#include "staticlm/staticlm.h"

namespace {

using staticlm::Status;
using staticlm::TextSink;

void DescribeScalar(const staticlm::gguf::GgufFile& file, const staticlm::gguf::KeyValue& kv,
                    TextSink* sink) {
  using staticlm::gguf::ValueType;
  const int key_len = static_cast<int>(kv.key.size());
  if (kv.type == ValueType::kString) {
    std::string_view v;
    if (!file.GetString(kv.key, &v).ok()) return;
    bool long_text = v.size() > 60 || std::memchr(v.data(), '\n', v.size()) != nullptr;
    if (long_text) {
      sink->Add("  %-44.*s (text, %zu bytes)\n", key_len, kv.key.data(), v.size());
    } else {
      sink->Add("  %-44.*s %.*s\n", key_len, kv.key.data(), static_cast<int>(v.size()), v.data());
    }
  } else if (kv.type == ValueType::kArray) {
    sink->Add("  %-44.*s (array of %llu)\n", key_len, kv.key.data(),
              static_cast<unsigned long long>(kv.array_count));
  } else if (kv.type == ValueType::kF32 || kv.type == ValueType::kF64) {
    float f = 0;
    if (file.GetF32(kv.key, &f).ok()) sink->Add("  %-44.*s %g\n", key_len, kv.key.data(), f);
  } else if (kv.type == ValueType::kBool) {
    bool b = false;
    if (file.GetBool(kv.key, &b).ok()) {
      sink->Add("  %-44.*s %s\n", key_len, kv.key.data(), b ? "true" : "false");
    }
  } else {
    uint64_t u = 0;
    int32_t i = 0;
    if (file.GetU64(kv.key, &u).ok()) {
      sink->Add("  %-44.*s %llu\n", key_len, kv.key.data(), static_cast<unsigned long long>(u));
    } else if (file.GetI32(kv.key, &i).ok()) {
      sink->Add("  %-44.*s %d\n", key_len, kv.key.data(), i);
    }
  }
}

void DescribeTensorTypes(const staticlm::gguf::GgufFile& file, TextSink* sink) {
  const staticlm::DType kTypes[] = {
      staticlm::DType::kF32,  staticlm::DType::kF16,  staticlm::DType::kBF16,
      staticlm::DType::kQ8_0, staticlm::DType::kQ6_K, staticlm::DType::kQ5_1,
      staticlm::DType::kQ5_0, staticlm::DType::kQ5_K, staticlm::DType::kQ4_0,
      staticlm::DType::kQ4_1, staticlm::DType::kQ4_K, staticlm::DType::kI32};
  sink->Add("tensors: %zu\n", file.tensors().size());
  for (staticlm::DType t : kTypes) {
    size_t count = 0;
    uint64_t bytes = 0;
    const char* example = nullptr;
    for (const auto& info : file.tensors()) {
      if (info.type != t) continue;
      if (example == nullptr) example = info.name.data();
      ++count;
      bytes += info.bytes;
    }
    if (count == 0) continue;
    sink->Add("  %-5s %4zu tensors %12llu bytes\n", staticlm::DTypeName(t), count,
              static_cast<unsigned long long>(bytes));
  }
  const auto* embd = file.FindTensor("token_embd.weight");
  if (embd != nullptr) {
    sink->Add("  token_embd.weight is %s%s\n", staticlm::DTypeName(embd->type),
              file.FindTensor("output.weight") == nullptr ? " (also the output head: tied)" : "");
  }
}

}  // namespace

extern "C" staticlm_status staticlm_describe_model(const char* model_path, char* out,
                                                   size_t capacity, char* error,
                                                   size_t error_capacity) {
  staticlm::hf::HfFolder folder;
  staticlm::gguf::GgufFile file;
  staticlm::ModelConfig config;
  Status s =
      model_path == nullptr || (out == nullptr && capacity > 0)
          ? Status::Error(staticlm::StatusCode::kInvalidArgument, "model path or out is NULL")
          : staticlm::hf::OpenModelDescription(model_path, nullptr, &folder, &file);
  if (s.ok()) s = staticlm::ReadModelConfig(file, &config);
  if (!s.ok()) {
    if (error != nullptr && error_capacity > 0)
      std::snprintf(error, error_capacity, "%s", s.message());
    return static_cast<staticlm_status>(static_cast<int>(s.code()));
  }
  TextSink sink(out, capacity);
  if (staticlm::hf::IsDirectory(model_path)) {
    // The metadata below is what llama.cpp's converter would write for this folder.
    sink.Add(
        "model: %s (Hugging Face folder, %zu safetensors file%s, %llu bytes; RoPE on "
        "halves)\n",
        model_path, folder.shard_count(), folder.shard_count() == 1 ? "" : "s",
        static_cast<unsigned long long>(folder.stored_bytes()));
  } else {
    sink.Add("model: %s (GGUF v%u, %llu bytes)\n", model_path, file.version(),
             static_cast<unsigned long long>(file.file_bytes()));
  }
  sink.Add(
      "architecture: %s, %d layers, width %d, %d heads, %d KV heads of %d, FFN %d, vocab %d, "
      "context %d, RoPE base %g, RMS eps %g\n",
      config.arch->name, config.n_layers, config.width, config.n_heads, config.n_kv_heads,
      config.head_dim, config.ffn_width, config.vocab_size, config.context_length, config.rope_base,
      config.rms_eps);
  if (config.sliding_window > 0) {
    sink.Add("sliding window: %d tokens, %s\n", config.sliding_window,
             config.sliding_window_pattern > 0 ? "every layer but each pattern-th" : "every layer");
    if (config.sliding_window_pattern > 0) {
      sink.Add("layer pattern: every %d-th layer global; RoPE base %g on the sliding layers\n",
               config.sliding_window_pattern, config.LayerRopeBase(0));
    }
  }
  if (config.rope_dims < config.head_dim) {
    sink.Add("partial RoPE: the first %d of each head's %d elements turn\n", config.rope_dims,
             config.head_dim);
  }
  const staticlm::RopeScaling& scaling = config.rope_scaling;
  const char* scaled_layers = config.LayerRopeScaled(0) ? "" : " (global layers only)";
  if (scaling.kind == staticlm::RopeScalingKind::kLinear) {
    sink.Add("RoPE scaling: linear, factor %g%s\n", scaling.factor, scaled_layers);
  } else if (scaling.kind == staticlm::RopeScalingKind::kYarn) {
    sink.Add(
        "RoPE scaling: YaRN, factor %g, original context %d, beta_fast %g, beta_slow %g, "
        "attention factor %g%s\n",
        scaling.factor, scaling.original_context, scaling.beta_fast, scaling.beta_slow,
        config.rope_attn_factor, scaled_layers);
  } else if (file.FindTensor("rope_freqs.weight") != nullptr) {
    sink.Add("RoPE scaling: frequency factors from rope_freqs.weight (Llama 3)\n");
  } else if (file.FindTensor("rope_factors_short.weight") != nullptr) {
    sink.Add(
        "RoPE scaling: longrope, short factors up to a context of %d, long beyond; "
        "attention factor %g\n",
        config.rope_scaling.original_context, config.rope_attn_factor);
  }
  sink.Add("metadata:\n");
  for (const auto& kv : file.keys()) DescribeScalar(file, kv, &sink);
  DescribeTensorTypes(file, &sink);
  return STATICLM_OK;
}
