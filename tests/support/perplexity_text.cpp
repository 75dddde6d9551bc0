#include "tests/support/perplexity_text.h"

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace staticlm::test {

std::vector<int32_t> PerplexityTextTokens(staticlm_context* ctx, const char* path, bool add_bos) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  if (s.size() > 12000) s.resize(s.rfind('\n', 12000) + 1);
  std::vector<int32_t> ids(s.size() + 16);
  size_t n = 0;
  EXPECT_EQ(staticlm_tokenize(ctx, s.data(), s.size(), add_bos ? 1 : 0, ids.data(), ids.size(), &n),
            STATICLM_OK);
  ids.resize(n);
  return ids;
}

double NextTokenNll(const staticlm_context* ctx, int32_t vocab, int32_t token) {
  const float* l = staticlm_logits(ctx);
  double max = l[0], sum = 0.0;
  for (int32_t i = 1; i < vocab; ++i) max = l[i] > max ? l[i] : max;
  for (int32_t i = 0; i < vocab; ++i) sum += std::exp(double(l[i]) - max);
  return std::log(sum) + max - l[token];
}

}  // namespace staticlm::test
