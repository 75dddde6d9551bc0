// Small helpers for tests that drive the C API: contexts that destroy themselves, a prompt's
// token ids, the current logits as a vector.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/staticlm.h"

namespace staticlm::test {

using ContextPtr = std::unique_ptr<staticlm_context, void (*)(staticlm_context*)>;

// A context of `model` under `limits`; on failure the test fails with the message and the
// pointer is null.
inline ContextPtr CreateContext(const char* model, const staticlm_limits& limits) {
  staticlm_context* raw = nullptr;
  char error[256] = {0};
  EXPECT_EQ(staticlm_create(model, &limits, &raw, error, sizeof(error)), STATICLM_OK) << error;
  return ContextPtr(raw, staticlm_destroy);
}

// `text` tokenized with BOS (as the model file asks).
inline std::vector<int32_t> Tokens(staticlm_context* ctx, const std::string& text) {
  std::vector<int32_t> tokens(text.size() + 8);
  size_t n = 0;
  EXPECT_EQ(staticlm_tokenize(ctx, text.data(), text.size(), 1, tokens.data(), tokens.size(), &n),
            STATICLM_OK);
  tokens.resize(n);
  return tokens;
}

// The logits of the last step (empty before any).
inline std::vector<float> Logits(staticlm_context* ctx) {
  staticlm_model_info info;
  staticlm_get_model_info(ctx, &info);
  const float* l = staticlm_logits(ctx);
  return l == nullptr ? std::vector<float>() : std::vector<float>(l, l + info.vocab_size);
}

}  // namespace staticlm::test
