// Readers of the golden files in tests/golden/, written by tests/reference/make_golden.py from
// Hugging Face transformers (see tests/reference/README.md for the format).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace staticlm::test {

struct TokenizerCase {
  std::string text;
  std::vector<int32_t> ids;
  // The reference's decoding of the ids (without BOS), when the file gives one ("decoded").
  bool has_decoded = false;
  std::string decoded;
};

struct LogitsPosition {
  int32_t position = 0;
  std::vector<std::pair<int32_t, float>> top;  // (token id, logit), best first
};

struct LogitsCase {
  std::string name;
  std::vector<int32_t> ids;
  std::vector<LogitsPosition> positions;
};

struct GreedyCase {
  std::string name;
  bool chat = false;
  std::string text;  // the prompt as given to the tokenizer (after the chat template)
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> tokens;  // the reference's greedy continuation
  std::vector<float> gaps;      // top-1 minus top-2 logit at each generated step
  // Only in llama.cpp's files ("deviation" lines): how far the reference's own arithmetic
  // (quantized activations) moved its logits at each step, measured against the unquantized
  // computation; empty for transformers' files, whose arithmetic is f32.
  std::vector<float> deviations;
  // The reference's top-1 logit at each generated step (the "top1" lines; empty where a file
  // has none).
  std::vector<float> top1;
};

// The logits of one prompt at every position from the window on (make_sliding_window_golden.py,
// make_gemma3_golden.py): lines "window W", "tokens …", "logits p v0 v1 …" for p = W, W+1, ….
struct WindowLogitsGolden {
  int window = 0;
  // make_gemma3_sinks_golden.py: the global layers' sinks and window ("sinks", "global_window");
  // 0 in the other files.
  int sinks = 0;
  int global_window = 0;
  std::vector<int32_t> tokens;
  std::vector<std::vector<float>> logits;  // [position − window][vocab]
};
// False when the file is missing, malformed, or its positions do not follow on.
bool ReadWindowLogitsGolden(const char* path, WindowLogitsGolden* g);

// Each returns false (with a message in *error) when the file is missing or malformed.
bool ReadTokenizerGolden(const std::string& path, std::vector<TokenizerCase>* cases,
                         std::string* error);
bool ReadLogitsGolden(const std::string& path, std::vector<LogitsCase>* cases, std::string* error);
bool ReadGreedyGolden(const std::string& path, std::vector<GreedyCase>* cases, std::string* error);

}  // namespace staticlm::test
