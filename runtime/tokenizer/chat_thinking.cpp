#include "runtime/tokenizer/chat_thinking.h"

namespace staticlm::text {

std::string_view StripNewlines(std::string_view s, bool left, bool right) {
  while (left && !s.empty() && s.front() == '\n') s.remove_prefix(1);
  while (right && !s.empty() && s.back() == '\n') s.remove_suffix(1);
  return s;
}

// content.split('</think>')[-1].lstrip('\n') and
// content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n').
ThinkingSplit SplitThinking(std::string_view content) {
  constexpr std::string_view kClose = "</think>";
  constexpr std::string_view kOpen = "<think>";
  const size_t first_close = content.find(kClose);
  if (first_close == std::string_view::npos) return {std::string_view(), content};
  const size_t last_close = content.rfind(kClose);
  ThinkingSplit split;
  split.answer = StripNewlines(content.substr(last_close + kClose.size()), true, false);
  std::string_view before = StripNewlines(content.substr(0, first_close), false, true);
  const size_t open = before.rfind(kOpen);
  if (open != std::string_view::npos) before = before.substr(open + kOpen.size());
  split.reasoning = StripNewlines(before, true, false);
  return split;
}

}  // namespace staticlm::text
