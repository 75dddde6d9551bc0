// Typed access to the fields of a parsed JSON document (nlohmann::json) with one-line errors
// that name the file and the field, for the readers of Hugging Face files. Init only.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "platform/status.h"

namespace staticlm::json_fields {

using Json = nlohmann::json;

// A field's full name for messages: "pre_tokenizer.pretokenizers[1].type".
std::string Join(std::string_view parent, std::string_view key);
std::string Index(std::string_view parent, size_t i);

// kFormatError: "FILE: FIELD is missing" or "FILE: FIELD is not WANT".
Status Missing(const char* file, std::string_view field);
Status NotA(const char* file, std::string_view field, const char* want);
// kUnsupported: "FILE: FIELD VALUE is not supported (HINT)"; the value is cut at 80 bytes.
Status Unsupported(const char* file, std::string_view field, const Json& value,
                   const char* hint = nullptr);

// The member `key` of `object`, or null when absent. `object` must be an object.
const Json* Find(const Json& object, const char* key);
// A member that must be present (any type but null when `allow_null` is false).
Status Require(const Json& object, const char* key, const char* file, std::string_view parent,
               const Json** out);

// Optional scalar members: absent (or null) leaves *out as it is.
Status GetBool(const Json& object, const char* key, const char* file, std::string_view parent,
               bool* out);
Status GetString(const Json& object, const char* key, const char* file, std::string_view parent,
                 std::string* out, bool* present = nullptr);
Status GetInt(const Json& object, const char* key, const char* file, std::string_view parent,
              int64_t* out, bool* present = nullptr);

}  // namespace staticlm::json_fields
