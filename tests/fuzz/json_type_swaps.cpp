#include "tests/fuzz/json_type_swaps.h"

#include <nlohmann/json.hpp>

namespace staticlm::fuzz {
namespace {

using nlohmann::json;

struct Swapper {
  json root;
  int values_left;
  int max_depth;
  const std::function<void(const std::string&)>& read;

  void Under(json& node, int depth) {
    if (depth > max_depth || !node.is_structured()) return;
    for (json& value : node) {
      if (--values_left < 0) return;
      const json kept = value;
      for (const json& other : {json(nullptr), json(true), json(-1.5), json(3), json("text"),
                                json::array(), json::object()}) {
        if (other.type() == kept.type()) continue;
        value = other;
        read(root.dump());
      }
      value = kept;
      Under(value, depth + 1);
    }
  }
};

}  // namespace

void ForEachTypeSwap(std::string_view text, int max_values, int max_depth,
                     const std::function<void(const std::string&)>& read) {
  json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return;
  Swapper swapper{std::move(parsed), max_values, max_depth, read};
  swapper.Under(swapper.root, 0);
}

}  // namespace staticlm::fuzz
