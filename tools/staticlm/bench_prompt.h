// The synthetic token sequence `staticlm bench` prefills: a fixed English paragraph, tokenized
// by the model's own tokenizer and repeated to length, so every run and every machine feeds the
// same ordinary token ids.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "staticlm/staticlm.h"

namespace staticlm::cli {

// The paragraph (ASCII, no special tokens).
const char* BenchParagraph();

// Fills `tokens` with `count` ids: the paragraph's tokens (with BOS first if the model adds
// one), then the paragraph's tokens again and again (without BOS). Allocates: call at init.
staticlm_status BuildBenchTokens(staticlm_context* ctx, size_t count, std::vector<int32_t>* tokens);

}  // namespace staticlm::cli
