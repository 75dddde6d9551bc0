#include "tools/staticlm/bench_prompt.h"

#include <cstring>

namespace staticlm::cli {

const char* BenchParagraph() {
  return "The old harbour town wakes early. Before the sun clears the hills, the fishing boats "
         "are already out past the breakwater, and the baker on the corner has lit his ovens. "
         "By seven the market square is full of crates of apples, bundles of herbs and the "
         "smell of fresh bread. Children walk to school along the sea wall, counting the gulls "
         "that sit on the railings. In the afternoon the wind turns, the boats come home, and "
         "the fishermen sort their catch on the quay while visitors take photographs of the "
         "lighthouse. When evening comes, the lamps along the promenade are switched on one by "
         "one, and the town grows quiet again. ";
}

staticlm_status BuildBenchTokens(staticlm_context* ctx, size_t count,
                                 std::vector<int32_t>* tokens) {
  const char* text = BenchParagraph();
  const size_t bytes = std::strlen(text);
  std::vector<int32_t> paragraph(bytes + 2);
  size_t n = 0;
  staticlm_status s =
      staticlm_tokenize(ctx, text, bytes, 0, paragraph.data(), paragraph.size(), &n);
  if (s != STATICLM_OK) return s;
  staticlm_model_info info;
  staticlm_get_model_info(ctx, &info);
  // With BOS, the repeats start after it, so BOS appears once, at position 0.
  const size_t repeat_from = info.add_bos && n > 1 ? 1 : 0;
  if (n <= repeat_from) return STATICLM_INTERNAL;
  tokens->clear();
  for (size_t i = 0; tokens->size() < count; ++i) {
    size_t index = i < n ? i : repeat_from + (i - n) % (n - repeat_from);
    tokens->push_back(paragraph[index]);
  }
  return STATICLM_OK;
}

}  // namespace staticlm::cli
