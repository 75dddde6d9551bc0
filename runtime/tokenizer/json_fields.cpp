#include "runtime/tokenizer/json_fields.h"

#include <algorithm>

namespace staticlm::json_fields {

namespace {

int Len(std::string_view s) {
  return static_cast<int>(std::min<size_t>(s.size(), 200));
}

}  // namespace

std::string Join(std::string_view parent, std::string_view key) {
  std::string out(parent);
  if (!out.empty()) out += '.';
  out += key;
  return out;
}

std::string Index(std::string_view parent, size_t i) {
  return std::string(parent) + "[" + std::to_string(i) + "]";
}

Status Missing(const char* file, std::string_view field) {
  return Status::Error(StatusCode::kFormatError, "%s: %.*s is missing", file, Len(field),
                       field.data());
}

Status NotA(const char* file, std::string_view field, const char* want) {
  return Status::Error(StatusCode::kFormatError, "%s: %.*s is not %s", file, Len(field),
                       field.data(), want);
}

Status Unsupported(const char* file, std::string_view field, const Json& value, const char* hint) {
  std::string text = value.is_string() ? value.get<std::string>() : value.dump();
  if (text.size() > 80) text = text.substr(0, 77) + "...";
  return Status::Error(StatusCode::kUnsupported, "%s: %.*s '%s' is not supported%s%s%s", file,
                       Len(field), field.data(), text.c_str(), hint ? " (" : "", hint ? hint : "",
                       hint ? ")" : "");
}

const Json* Find(const Json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

Status Require(const Json& object, const char* key, const char* file, std::string_view parent,
               const Json** out) {
  *out = Find(object, key);
  if (*out == nullptr || (*out)->is_null()) return Missing(file, Join(parent, key));
  return Status::Ok();
}

Status GetBool(const Json& object, const char* key, const char* file, std::string_view parent,
               bool* out) {
  const Json* v = Find(object, key);
  if (v == nullptr || v->is_null()) return Status::Ok();
  if (!v->is_boolean()) return NotA(file, Join(parent, key), "true or false");
  *out = v->get<bool>();
  return Status::Ok();
}

Status GetString(const Json& object, const char* key, const char* file, std::string_view parent,
                 std::string* out, bool* present) {
  if (present != nullptr) *present = false;
  const Json* v = Find(object, key);
  if (v == nullptr || v->is_null()) return Status::Ok();
  if (!v->is_string()) return NotA(file, Join(parent, key), "a string");
  *out = v->get<std::string>();
  if (present != nullptr) *present = true;
  return Status::Ok();
}

Status GetInt(const Json& object, const char* key, const char* file, std::string_view parent,
              int64_t* out, bool* present) {
  if (present != nullptr) *present = false;
  const Json* v = Find(object, key);
  if (v == nullptr || v->is_null()) return Status::Ok();
  if (!v->is_number_integer()) return NotA(file, Join(parent, key), "an integer");
  *out = v->get<int64_t>();
  if (present != nullptr) *present = true;
  return Status::Ok();
}

}  // namespace staticlm::json_fields
