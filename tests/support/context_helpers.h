// Small helpers for tests that drive the C API: contexts that destroy themselves, a prompt's
// token ids, the current logits as a vector.
#pragma once

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/staticlm.h"

namespace staticlm::test {

struct ContextDeleter {
  void operator()(staticlm_context* c) const { staticlm_destroy(c); }
};
using ContextPtr = std::unique_ptr<staticlm_context, ContextDeleter>;

// A context of `model` under `limits`; on failure the test fails with the message and the
// pointer is null.
inline ContextPtr CreateContext(const char* model, const staticlm_limits& limits) {
  staticlm_context* raw = nullptr;
  char error[256] = {0};
  EXPECT_EQ(staticlm_create(model, &limits, &raw, error, sizeof(error)), STATICLM_OK) << error;
  return ContextPtr(raw);
}

// A context of `model` under `limits`, or null with staticlm_create's message in *error: for
// tests that skip, rather than fail, when a backend cannot prepare here.
inline ContextPtr TryCreateContext(const char* model, const staticlm_limits& limits,
                                   std::string* error) {
  staticlm_context* raw = nullptr;
  char message[512] = {0};
  if (staticlm_create(model, &limits, &raw, message, sizeof(message)) != STATICLM_OK) {
    *error = message;
  }
  return ContextPtr(raw);
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

#ifdef STATICLM_DEFAULT_MODEL  // defined for the test executables, not the support library
// Whether the default model file is there (tests that need it skip without it).
inline bool HaveDefaultModel() {
  FILE* f = std::fopen(STATICLM_DEFAULT_MODEL, "rb");
  if (f != nullptr) std::fclose(f);
  return f != nullptr;
}
#endif

// The greedy token of a logits row.
inline int32_t Argmax(const std::vector<float>& v) {
  return int32_t(std::max_element(v.begin(), v.end()) - v.begin());
}

// The largest logit minus the second: how near a tie the greedy choice is.
inline float TopTwoGap(std::vector<float> v) {
  std::partial_sort(v.begin(), v.begin() + 2, v.end(), std::greater<float>());
  return v[0] - v[1];
}

}  // namespace staticlm::test
