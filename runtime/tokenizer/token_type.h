// The token types of tokenizer.ggml.token_type (llama.cpp's numbering).
#pragma once

#include <cstdint>

namespace staticlm {

// tokenizer.ggml.token_type values.
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

}  // namespace staticlm
