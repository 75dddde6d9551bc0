// Qwen3's handling of <think> blocks in assistant turns (ChatParams::rewrites_thinking), as its
// chat template does it with Python string methods. Run-phase safe: views only, no allocation.
#pragma once

#include <cstddef>
#include <string_view>

namespace staticlm::text {

struct ThinkingSplit {
  std::string_view reasoning;  // between the last "<think>" and the first "</think>", trimmed
  std::string_view answer;     // after the last "</think>", leading newlines removed
};

// Splits an assistant message as the template does: without "</think>", no reasoning and the
// whole text as the answer.
ThinkingSplit SplitThinking(std::string_view content);

// Python's str.strip / lstrip / rstrip of newlines only.
std::string_view StripNewlines(std::string_view s, bool left, bool right);

}  // namespace staticlm::text
