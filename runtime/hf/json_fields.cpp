#include "runtime/hf/json_fields.h"

#include <cmath>

namespace staticlm::hf {

Status ParseJson(std::string_view text, const char* file, Json* out) {
  // nlohmann reports where and why only through its exception; it is caught here, so no
  // exception leaves this function.
  try {
    *out = Json::parse(text.begin(), text.end());
  } catch (const Json::exception& e) {
    return Status::Error(StatusCode::kFormatError, "%s: malformed JSON: %s", file, e.what());
  }
  return Status::Ok();
}

const char* JsonTypeName(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::object:
      return "an object";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "an integer";
    case Json::value_t::number_float:
      return "a number";
    default:
      return "of another type";
  }
}

const Json* JsonFields::Find(const char* key) const {
  if (!object_.is_object()) return nullptr;
  auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

bool JsonFields::Has(const char* key) const {
  return Find(key) != nullptr;
}

Status JsonFields::Fail(const char* key, const char* what) const {
  return Status::Error(StatusCode::kFormatError, "%s: key '%s%s' %s", file_, prefix_, key, what);
}

Status JsonFields::WrongType(const char* key, const Json& value, const char* expected) const {
  return Status::Error(StatusCode::kFormatError, "%s: key '%s%s' is %s, expected %s", file_,
                       prefix_, key, JsonTypeName(value), expected);
}

Status JsonFields::OptionalInt(const char* key, int64_t min, int64_t max, int64_t* out) const {
  const Json* v = Find(key);
  if (v == nullptr) return Status::Ok();
  int64_t value = 0;
  if (v->is_number_unsigned()) {
    uint64_t u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return Fail(key, "is out of range");
    value = static_cast<int64_t>(u);
  } else if (v->is_number_integer()) {
    value = v->get<int64_t>();
  } else {
    return WrongType(key, *v, "an integer");
  }
  if (value < min || value > max) {
    return Status::Error(StatusCode::kFormatError, "%s: key '%s%s' = %lld is outside [%lld, %lld]",
                         file_, prefix_, key, static_cast<long long>(value),
                         static_cast<long long>(min), static_cast<long long>(max));
  }
  *out = value;
  return Status::Ok();
}

Status JsonFields::Int(const char* key, int64_t min, int64_t max, int64_t* out) const {
  if (!Has(key)) return Fail(key, "is missing");
  return OptionalInt(key, min, max, out);
}

Status JsonFields::OptionalFloat(const char* key, double* out) const {
  const Json* v = Find(key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_number()) return WrongType(key, *v, "a number");
  double d = v->get<double>();
  if (!std::isfinite(d)) return Fail(key, "is not finite");
  *out = d;
  return Status::Ok();
}

Status JsonFields::Float(const char* key, double* out) const {
  if (!Has(key)) return Fail(key, "is missing");
  return OptionalFloat(key, out);
}

Status JsonFields::OptionalBool(const char* key, bool* out) const {
  const Json* v = Find(key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_boolean()) return WrongType(key, *v, "a boolean");
  *out = v->get<bool>();
  return Status::Ok();
}

Status JsonFields::OptionalString(const char* key, std::string* out) const {
  const Json* v = Find(key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_string()) return WrongType(key, *v, "a string");
  *out = v->get<std::string>();
  return Status::Ok();
}

Status JsonFields::String(const char* key, std::string* out) const {
  if (!Has(key)) return Fail(key, "is missing");
  return OptionalString(key, out);
}

Status JsonFields::OptionalObject(const char* key, const Json** out) const {
  *out = Find(key);
  if (*out != nullptr && !(*out)->is_object()) return WrongType(key, **out, "an object");
  return Status::Ok();
}

}  // namespace staticlm::hf
