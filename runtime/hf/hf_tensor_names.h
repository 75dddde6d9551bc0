// Hugging Face tensor names → the GGUF names llama.cpp's converter gives them
// (gguf-py/gguf/tensor_mapping.py): "model.layers.3.self_attn.q_proj.weight" →
// "blk.3.attn_q.weight". Only the decoder families staticlm runs are mapped.
#pragma once

#include <string>
#include <string_view>

namespace staticlm::hf {

enum class TensorNameMatch {
  kMapped,   // *gguf is the name
  kIgnored,  // a buffer transformers keeps that the converter drops (rotary inv_freq)
  kUnknown,  // no mapping: the folder holds a tensor staticlm would not use
};

// `arch` is the GGUF architecture (Gemma 3 names its four norms differently).
TensorNameMatch MapTensorName(std::string_view hf, std::string_view arch, std::string* gguf);

}  // namespace staticlm::hf
