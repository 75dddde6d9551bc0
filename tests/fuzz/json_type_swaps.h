// Type swaps for the fuzz targets whose input is JSON. A byte mutation rarely turns one JSON
// value into a value of another type and leaves the text valid, yet a mistyped field is the
// commonest bad input a JSON reader meets (and nlohmann's readers throw on one: `get`, `value`).
// So a target whose input parses also runs its reader on the same document with each value in
// turn replaced by one of every other JSON type.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace staticlm::fuzz {

// When `text` is JSON: for up to `max_values` values (depth first, at most `max_depth` levels
// down), calls `read` with the document's text with that value replaced by each JSON type it is
// not (null, boolean, float, integer, string, array, object). Nothing when `text` is not JSON.
void ForEachTypeSwap(std::string_view text, int max_values, int max_depth,
                     const std::function<void(const std::string&)>& read);

}  // namespace staticlm::fuzz
