// Typed reads of fields from untrusted JSON (nlohmann::json, Debian's nlohmann-json3-dev) with
// one-line errors that name the file and the key: "config.json: key 'hidden_size' is a
// string, expected an integer". Init only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "platform/status.h"

namespace staticlm::hf {

using Json = nlohmann::json;

// Parses `text`; kFormatError "<file>: malformed JSON: <where and why>" (no exception escapes).
Status ParseJson(std::string_view text, const char* file, Json* out);

// The fields of one JSON object. Required reads fail on a missing or null key; Optional reads
// leave *out as it is then. Every read fails on a value of the wrong type or out of range.
// `prefix` names the object inside the file ("rope_scaling."), for messages.
class JsonFields {
 public:
  JsonFields(const Json& object, const char* file, const char* prefix = "")
      : object_(object), file_(file), prefix_(prefix) {}

  // Present and not null.
  bool Has(const char* key) const;
  Status Int(const char* key, int64_t min, int64_t max, int64_t* out) const;
  Status OptionalInt(const char* key, int64_t min, int64_t max, int64_t* out) const;
  Status Float(const char* key, double* out) const;  // any number, finite
  Status OptionalFloat(const char* key, double* out) const;
  Status OptionalBool(const char* key, bool* out) const;
  Status String(const char* key, std::string* out) const;
  Status OptionalString(const char* key, std::string* out) const;
  // An object (or, optional, absent/null: *out = nullptr).
  Status OptionalObject(const char* key, const Json** out) const;

  // kFormatError "<file>: key '<prefix><key>' <what>".
  Status Fail(const char* key, const char* what) const;

 private:
  const Json* Find(const char* key) const;
  Status WrongType(const char* key, const Json& value, const char* expected) const;

  const Json& object_;
  const char* file_;
  const char* prefix_;
};

// "a string", "an array", ... for messages.
const char* JsonTypeName(const Json& value);

}  // namespace staticlm::hf
