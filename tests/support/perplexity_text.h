// What the perplexity measurements share (sink_cache_test, gemma3_sinks_quality_test): the fixed
// English text they are judged on (tests/golden/perplexity_text.md) and a token's −log p.
#pragma once

#include <cstdint>
#include <vector>

#include "staticlm/staticlm.h"

namespace staticlm::test {

// The text (`path`: STATICLM_GOLDEN_DIR "/perplexity_text.md"), its whole lines within the
// tokenizer's default prompt limit (16 KiB), as the context's model tokenizes them; `add_bos`:
// as staticlm_tokenize's flag.
std::vector<int32_t> PerplexityTextTokens(staticlm_context* ctx, const char* path, bool add_bos);

// −log p(token) under the context's current logits (a softmax over `vocab` in double).
double NextTokenNll(const staticlm_context* ctx, int32_t vocab, int32_t token);

}  // namespace staticlm::test
