// Header and key/value section: everything before the tensor infos.
#include <cinttypes>

#include "runtime/gguf/gguf_parse.h"

namespace staticlm::gguf {

namespace {

using ull = unsigned long long;

// Smallest encodings, used to reject counts that cannot fit in the bytes left before
// reserving memory or looping over them.
constexpr uint64_t kMinKeyValueBytes = 8 + 4 + 1;  // empty-name length, type, u8 value
constexpr uint64_t kMinStringBytes = 8;            // length of an empty string
constexpr uint64_t kMinArrayBytes = 4 + 8;         // element type and count of an empty array

// Reads a u64 length and that many bytes as a view into the file.
Status ReadString(ByteReader& r, const Subject& subject, const char* what, std::string_view* out) {
  uint64_t at = r.pos();
  uint64_t len = 0;
  if (!r.Read(&len)) {
    return Fail(subject, at, "truncated: %s length needs 8 bytes, %llu left", what,
                static_cast<ull>(r.remaining()));
  }
  if (len > r.remaining()) {
    return Fail(subject, at, "%s length %llu exceeds the %llu bytes left in the file", what,
                static_cast<ull>(len), static_cast<ull>(r.remaining()));
  }
  *out = std::string_view(reinterpret_cast<const char*>(r.cursor()), len);
  r.Skip(len);
  return Status::Ok();
}

Status CheckValue(ByteReader& r, ValueType type, const Subject& subject, int depth);

// Checks `count` elements of type `type`, starting at the cursor.
Status CheckElements(ByteReader& r, ValueType type, uint64_t count, const Subject& subject,
                     int depth) {
  uint64_t at = r.pos();
  uint32_t scalar = ScalarBytes(type);
  uint64_t min_bytes = scalar != 0                  ? scalar
                       : type == ValueType::kString ? kMinStringBytes
                                                    : kMinArrayBytes;
  if (count > r.remaining() / min_bytes) {
    return Fail(subject, at,
                "array of %llu elements of type %s needs at least %llu bytes each, %llu left",
                static_cast<ull>(count), ValueTypeName(type), static_cast<ull>(min_bytes),
                static_cast<ull>(r.remaining()));
  }
  if (scalar != 0 && type != ValueType::kBool) {
    r.Skip(count * scalar);
    return Status::Ok();
  }
  for (uint64_t i = 0; i < count; ++i) {
    STATICLM_RETURN_IF_ERROR(CheckValue(r, type, subject, depth));
  }
  return Status::Ok();
}

// Checks one encoded value of type `type` at the cursor and moves past it. `depth` counts
// the arrays that enclose it.
Status CheckValue(ByteReader& r, ValueType type, const Subject& subject, int depth) {
  uint64_t at = r.pos();
  if (type == ValueType::kString) {
    std::string_view s;
    return ReadString(r, subject, "string", &s);
  }
  if (type == ValueType::kBool) {
    uint8_t b = 0;
    if (!r.Read(&b)) return Fail(subject, at, "truncated: bool needs 1 byte, 0 left");
    if (b > 1) return Fail(subject, at, "bool value %u is neither 0 nor 1", b);
    return Status::Ok();
  }
  if (type != ValueType::kArray) {
    uint32_t n = ScalarBytes(type);
    if (!r.Skip(n)) {
      return Fail(subject, at, "truncated: %s needs %u bytes, %llu left", ValueTypeName(type), n,
                  static_cast<ull>(r.remaining()));
    }
    return Status::Ok();
  }
  if (depth >= kMaxArrayDepth) {
    return Fail(subject, at, "arrays nested more than %d deep", kMaxArrayDepth);
  }
  uint32_t element_type = 0;
  uint64_t count = 0;
  if (!r.Read(&element_type) || !r.Read(&count)) {
    return Fail(subject, at, "truncated: array header needs 12 bytes, %llu left",
                static_cast<ull>(r.size() - at));
  }
  if (!IsValidValueType(element_type)) {
    return Fail(subject, at, "array element type %u is not a GGUF type", element_type);
  }
  return CheckElements(r, static_cast<ValueType>(element_type), count, subject, depth + 1);
}

Status ParseKeyValue(ByteReader& r, uint64_t index, KeyValue* kv) {
  uint64_t at = r.pos();
  STATICLM_RETURN_IF_ERROR(ReadString(r, Numbered("key", index), "name", &kv->key));
  Subject subject = Named("key", kv->key);
  if (kv->key.empty()) return Fail(Numbered("key", index), at, "empty key name");
  if (kv->key.size() > kMaxKeyBytes) {
    return Fail(subject, at, "key name of %zu bytes is longer than %llu", kv->key.size(),
                static_cast<ull>(kMaxKeyBytes));
  }
  uint64_t type_at = r.pos();
  uint32_t type = 0;
  if (!r.Read(&type)) return Fail(subject, type_at, "truncated: value type needs 4 bytes");
  if (!IsValidValueType(type)) {
    return Fail(subject, type_at, "value type %u is not a GGUF type", type);
  }
  kv->type = static_cast<ValueType>(type);
  uint64_t value_at = r.pos();
  const uint8_t* value = r.cursor();
  if (kv->type == ValueType::kArray) {
    uint32_t element_type = 0;
    if (!r.Read(&element_type) || !r.Read(&kv->array_count)) {
      return Fail(subject, value_at, "truncated: array header needs 12 bytes, %llu left",
                  static_cast<ull>(r.size() - value_at));
    }
    if (!IsValidValueType(element_type)) {
      return Fail(subject, value_at, "array element type %u is not a GGUF type", element_type);
    }
    kv->array_type = static_cast<ValueType>(element_type);
    value_at = r.pos();
    value = r.cursor();
    STATICLM_RETURN_IF_ERROR(CheckElements(r, kv->array_type, kv->array_count, subject, 1));
  } else {
    STATICLM_RETURN_IF_ERROR(CheckValue(r, kv->type, subject, 0));
  }
  kv->value = value;
  kv->value_bytes = r.pos() - value_at;
  return Status::Ok();
}

}  // namespace

Status ParseHeader(ByteReader& r, uint32_t* version, uint64_t* tensor_count, uint64_t* kv_count) {
  uint32_t magic = 0;
  if (!r.Read(&magic)) {
    return Status::Error(StatusCode::kFormatError,
                         "not a GGUF file: %llu bytes, too short for the 4-byte magic",
                         static_cast<ull>(r.size()));
  }
  if (magic != kMagic) {
    return Status::Error(StatusCode::kFormatError,
                         "not a GGUF file: magic is 0x%08" PRIx32 ", expected 0x%08" PRIx32
                         " (\"GGUF\")",
                         magic, kMagic);
  }
  if (!r.Read(version)) {
    return Status::Error(StatusCode::kFormatError, "truncated at byte 4: version needs 4 bytes");
  }
  if (*version == 1) {
    return Status::Error(StatusCode::kUnsupported,
                         "GGUF version 1 is not supported (it predates 64-bit counts); "
                         "convert the model again with a current llama.cpp");
  }
  if (*version != 2 && *version != 3) {
    const char* hint = (*version & 0xffffu) == 0 ? " (a big-endian file?)" : "";
    return Status::Error(StatusCode::kUnsupported,
                         "GGUF version %" PRIu32 " is not supported (only 2 and 3)%s", *version,
                         hint);
  }
  if (!r.Read(tensor_count) || !r.Read(kv_count)) {
    return Status::Error(StatusCode::kFormatError,
                         "truncated: the header needs 24 bytes, the file has %llu",
                         static_cast<ull>(r.size()));
  }
  return Status::Ok();
}

Status ParseKeyValues(ByteReader& r, uint64_t count, std::vector<KeyValue>* out) {
  if (count > r.remaining() / kMinKeyValueBytes || count > UINT32_MAX) {
    return Status::Error(StatusCode::kFormatError,
                         "header at byte 16: kv_count %llu cannot fit in the %llu bytes left "
                         "(truncated or corrupt file)",
                         static_cast<ull>(count), static_cast<ull>(r.remaining()));
  }
  out->clear();
  out->reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    KeyValue kv;
    STATICLM_RETURN_IF_ERROR(ParseKeyValue(r, i, &kv));
    out->push_back(kv);
  }
  return Status::Ok();
}

}  // namespace staticlm::gguf
