// Typed access to metadata values. Parse() has validated every encoded value, so these only
// check types and ranges, never bounds.
#include <cstdint>

#include "runtime/gguf/gguf_file.h"
#include "runtime/gguf/gguf_parse.h"

namespace staticlm::gguf {

namespace {

// An integer of any GGUF width and sign: value = negative ? -magnitude : magnitude.
struct Integer {
  bool negative;
  uint64_t magnitude;
};

Integer FromSigned(int64_t v) {
  if (v >= 0) return {false, static_cast<uint64_t>(v)};
  return {true, 0 - static_cast<uint64_t>(v)};
}

Integer LoadInteger(ValueType type, const uint8_t* p) {
  switch (type) {
    case ValueType::kU8:
      return {false, LoadLe<uint8_t>(p)};
    case ValueType::kU16:
      return {false, LoadLe<uint16_t>(p)};
    case ValueType::kU32:
      return {false, LoadLe<uint32_t>(p)};
    case ValueType::kU64:
      return {false, LoadLe<uint64_t>(p)};
    case ValueType::kI8:
      return FromSigned(LoadLe<int8_t>(p));
    case ValueType::kI16:
      return FromSigned(LoadLe<int16_t>(p));
    case ValueType::kI32:
      return FromSigned(LoadLe<int32_t>(p));
    case ValueType::kI64:
      return FromSigned(LoadLe<int64_t>(p));
    default:
      return {false, 0};
  }
}

bool FitsI32(Integer v) {
  return v.negative ? v.magnitude <= uint64_t{1} << 31 : v.magnitude <= INT32_MAX;
}

int32_t ToI32(Integer v) {
  return v.negative ? static_cast<int32_t>(-static_cast<int64_t>(v.magnitude))
                    : static_cast<int32_t>(v.magnitude);
}

Status WrongType(const KeyValue& kv, const char* expected) {
  if (kv.type == ValueType::kArray) {
    return Status::Error(StatusCode::kFormatError, "key '%s': expected %s, found array of %s",
                         Printable(kv.key).text, expected, ValueTypeName(kv.array_type));
  }
  return Status::Error(StatusCode::kFormatError, "key '%s': expected %s, found %s",
                       Printable(kv.key).text, expected, ValueTypeName(kv.type));
}

Status OutOfRange(const KeyValue& kv, Integer v, const char* expected) {
  return Status::Error(StatusCode::kFormatError, "key '%s': %s%llu does not fit in %s",
                       Printable(kv.key).text, v.negative ? "-" : "",
                       static_cast<unsigned long long>(v.magnitude), expected);
}

Status Lookup(const GgufFile& file, std::string_view key, const KeyValue** out) {
  *out = file.FindKey(key);
  if (*out == nullptr) {
    return Status::Error(StatusCode::kFormatError, "missing key '%s'", Printable(key).text);
  }
  return Status::Ok();
}

Status GetInteger(const GgufFile& file, std::string_view key, const char* expected, Integer* out,
                  const KeyValue** kv) {
  STATICLM_RETURN_IF_ERROR(Lookup(file, key, kv));
  if (!IsIntegerType((*kv)->type)) return WrongType(**kv, expected);
  *out = LoadInteger((*kv)->type, (*kv)->value);
  return Status::Ok();
}

}  // namespace

Status GgufFile::GetU32(std::string_view key, uint32_t* out) const {
  Integer v{false, 0};
  const KeyValue* kv = nullptr;
  STATICLM_RETURN_IF_ERROR(GetInteger(*this, key, "u32", &v, &kv));
  if (v.negative || v.magnitude > UINT32_MAX) return OutOfRange(*kv, v, "u32");
  *out = static_cast<uint32_t>(v.magnitude);
  return Status::Ok();
}

Status GgufFile::GetI32(std::string_view key, int32_t* out) const {
  Integer v{false, 0};
  const KeyValue* kv = nullptr;
  STATICLM_RETURN_IF_ERROR(GetInteger(*this, key, "i32", &v, &kv));
  if (!FitsI32(v)) return OutOfRange(*kv, v, "i32");
  *out = ToI32(v);
  return Status::Ok();
}

Status GgufFile::GetU64(std::string_view key, uint64_t* out) const {
  Integer v{false, 0};
  const KeyValue* kv = nullptr;
  STATICLM_RETURN_IF_ERROR(GetInteger(*this, key, "u64", &v, &kv));
  if (v.negative) return OutOfRange(*kv, v, "u64");
  *out = v.magnitude;
  return Status::Ok();
}

Status GgufFile::GetF32(std::string_view key, float* out) const {
  const KeyValue* kv = nullptr;
  STATICLM_RETURN_IF_ERROR(Lookup(*this, key, &kv));
  if (kv->type == ValueType::kF32) {
    *out = LoadLe<float>(kv->value);
  } else if (kv->type == ValueType::kF64) {
    *out = static_cast<float>(LoadLe<double>(kv->value));
  } else {
    return WrongType(*kv, "f32");
  }
  return Status::Ok();
}

Status GgufFile::GetBool(std::string_view key, bool* out) const {
  const KeyValue* kv = nullptr;
  STATICLM_RETURN_IF_ERROR(Lookup(*this, key, &kv));
  if (kv->type != ValueType::kBool) return WrongType(*kv, "bool");
  *out = kv->value[0] != 0;
  return Status::Ok();
}

Status GgufFile::GetString(std::string_view key, std::string_view* out) const {
  const KeyValue* kv = nullptr;
  STATICLM_RETURN_IF_ERROR(Lookup(*this, key, &kv));
  if (kv->type != ValueType::kString) return WrongType(*kv, "string");
  *out = std::string_view(reinterpret_cast<const char*>(kv->value) + 8, kv->value_bytes - 8);
  return Status::Ok();
}

Status GgufFile::GetStringArray(std::string_view key, std::vector<std::string_view>* out) const {
  const KeyValue* kv = nullptr;
  STATICLM_RETURN_IF_ERROR(Lookup(*this, key, &kv));
  if (kv->type != ValueType::kArray || kv->array_type != ValueType::kString) {
    return WrongType(*kv, "array of string");
  }
  out->clear();
  out->reserve(kv->array_count);
  const uint8_t* p = kv->value;
  for (uint64_t i = 0; i < kv->array_count; ++i) {
    uint64_t len = LoadLe<uint64_t>(p);
    out->emplace_back(reinterpret_cast<const char*>(p) + 8, len);
    p += 8 + len;
  }
  return Status::Ok();
}

Status GgufFile::GetI32Array(std::string_view key, std::vector<int32_t>* out) const {
  const KeyValue* kv = nullptr;
  STATICLM_RETURN_IF_ERROR(Lookup(*this, key, &kv));
  if (kv->type != ValueType::kArray || !IsIntegerType(kv->array_type)) {
    return WrongType(*kv, "array of integers");
  }
  out->clear();
  out->reserve(kv->array_count);
  uint32_t stride = ScalarBytes(kv->array_type);
  for (uint64_t i = 0; i < kv->array_count; ++i) {
    Integer v = LoadInteger(kv->array_type, kv->value + i * stride);
    if (!FitsI32(v)) {
      return Status::Error(StatusCode::kFormatError,
                           "key '%s': element %llu = %s%llu does not "
                           "fit in i32",
                           Printable(kv->key).text, static_cast<unsigned long long>(i),
                           v.negative ? "-" : "", static_cast<unsigned long long>(v.magnitude));
    }
    out->push_back(ToI32(v));
  }
  return Status::Ok();
}

Status GgufFile::GetF32Array(std::string_view key, std::vector<float>* out) const {
  const KeyValue* kv = nullptr;
  STATICLM_RETURN_IF_ERROR(Lookup(*this, key, &kv));
  bool f64 = kv->array_type == ValueType::kF64;
  if (kv->type != ValueType::kArray || (kv->array_type != ValueType::kF32 && !f64)) {
    return WrongType(*kv, "array of f32");
  }
  out->clear();
  out->reserve(kv->array_count);
  for (uint64_t i = 0; i < kv->array_count; ++i) {
    out->push_back(f64 ? static_cast<float>(LoadLe<double>(kv->value + i * 8))
                       : LoadLe<float>(kv->value + i * 4));
  }
  return Status::Ok();
}

}  // namespace staticlm::gguf
