// config.json of a Hugging Face folder, read into the GGUF metadata keys llama.cpp's converter
// (convert_hf_to_gguf.py) would write for the same model, so that ReadModelConfig and
// everything after it read a folder as they read a GGUF file. Every field is validated; a
// missing or malformed one is a one-line error naming config.json and the key. Init only.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "platform/status.h"
#include "runtime/hf/gguf_header_builder.h"

namespace staticlm::hf {

// What a folder needs beyond the metadata: how its tensors differ from the converter's.
struct HfConfig {
  std::string model_type;  // config.json's, e.g. "qwen2"
  std::string arch;        // the GGUF architecture, e.g. "qwen2" ("llama" for mistral)
  int32_t n_layers = 0;
  int32_t head_dim = 0;
  // The elements of each head RoPE turns: head_dim × partial_rotary_factor (top level, or in
  // rope_parameters as transformers 5 writes it), rounded down as transformers does.
  int32_t rope_dims = 0;
  // The converter stores RMSNorm weights plus this (Gemma: transformers' norm is x·(1 + w)).
  float norm_offset = 0.0f;
  // tie_word_embeddings (transformers' default: false): without it lm_head.weight is required.
  bool tied_embeddings = false;
  float rope_base = 10000.0f;
  int32_t context_length = 0;
  // F32 tensors the converter computes from the config (rope_tensors.h): Llama 3's
  // rope_freqs.weight, Phi-3's rope_factors_long/short.weight. Made at init in the folder's
  // weight tail.
  struct ExtraTensor {
    std::string name;
    std::vector<float> values;
  };
  std::vector<ExtraTensor> extra_tensors;
};

// Parses `text` (config.json, `file` for messages), fills `config` and adds the metadata to
// `header` (general.architecture first). kUnsupported for a model_type staticlm does not
// know (naming it and the known ones) or a setting it cannot honour.
Status ReadHfConfig(std::string_view text, const char* file, HfConfig* config,
                    GgufHeaderBuilder* header);

}  // namespace staticlm::hf
