#include "runtime/hf/safetensors_header.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "runtime/hf/json_fields.h"

namespace staticlm::hf {
namespace {

using ull = unsigned long long;

bool DTypeFromName(const std::string& name, DType* out) {
  if (name == "F32")
    *out = DType::kF32;
  else if (name == "F16")
    *out = DType::kF16;
  else if (name == "BF16")
    *out = DType::kBF16;
  else
    return false;
  return true;
}

// "<file>: tensor '<name>' <what>", the name cut to keep the line short.
Status TensorError(StatusCode code, const char* file, const std::string& name, const char* what) {
  return Status::Error(code, "%s: tensor '%.80s' %s", file, name.c_str(), what);
}

Status ReadShape(const Json& shape, const char* file, SafetensorsEntry* e) {
  if (!shape.is_array() || shape.size() > 4) {
    return TensorError(StatusCode::kFormatError, file, e->name,
                       "has a 'shape' that is not an array of at most 4 sizes");
  }
  e->n_dims = static_cast<uint32_t>(shape.size());
  for (uint32_t d = 0; d < e->n_dims; ++d) {
    const Json& s = shape[d];
    if (!s.is_number_unsigned() || s.get<uint64_t>() > (1ull << 32)) {
      return TensorError(StatusCode::kFormatError, file, e->name,
                         "has a 'shape' entry that is not a size up to 2^32");
    }
    e->shape[d] = static_cast<int64_t>(s.get<uint64_t>());
  }
  return Status::Ok();
}

Status ReadOffsets(const Json& offsets, uint64_t data_bytes, const char* file,
                   SafetensorsEntry* e) {
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned()) {
    return TensorError(StatusCode::kFormatError, file, e->name,
                       "has 'data_offsets' that are not two unsigned integers");
  }
  e->begin = offsets[0].get<uint64_t>();
  e->end = offsets[1].get<uint64_t>();
  if (e->begin > e->end || e->end > data_bytes) {
    return Status::Error(StatusCode::kFormatError,
                         "%s: tensor '%.80s' has data_offsets [%llu, %llu] outside the %llu bytes "
                         "of data (truncated file?)",
                         file, e->name.c_str(), static_cast<ull>(e->begin),
                         static_cast<ull>(e->end), static_cast<ull>(data_bytes));
  }
  // Shapes are at most 4 sizes of 2^32 each, so the product is checked in 128 bits' stead by
  // dividing: elements * element bytes must equal the byte range.
  uint64_t elements = 1;
  for (uint32_t d = 0; d < e->n_dims; ++d) {
    uint64_t s = static_cast<uint64_t>(e->shape[d]);
    if (s != 0 && elements > (1ull << 62) / s) {
      return TensorError(StatusCode::kFormatError, file, e->name, "has too many elements");
    }
    elements *= s;
  }
  if (elements * GetDTypeInfo(e->dtype).block_bytes != e->end - e->begin) {
    return TensorError(StatusCode::kFormatError, file, e->name,
                       "has data_offsets whose size does not match its shape and dtype");
  }
  return Status::Ok();
}

Status ReadEntry(const std::string& name, const Json& value, uint64_t data_bytes, const char* file,
                 SafetensorsEntry* e) {
  e->name = name;
  if (!value.is_object()) {
    return TensorError(StatusCode::kFormatError, file, name, "is not a JSON object");
  }
  char prefix[120];
  std::snprintf(prefix, sizeof(prefix), "%.80s.", name.c_str());
  JsonFields fields(value, file, prefix);
  std::string dtype;
  STATICLM_RETURN_IF_ERROR(fields.String("dtype", &dtype));
  if (!DTypeFromName(dtype, &e->dtype)) {
    return Status::Error(StatusCode::kUnsupported,
                         "%s: tensor '%.80s' has dtype '%.16s' (supported: F32, F16, BF16)", file,
                         name.c_str(), dtype.c_str());
  }
  if (!fields.Has("shape")) return fields.Fail("shape", "is missing");
  STATICLM_RETURN_IF_ERROR(ReadShape(value["shape"], file, e));
  if (!fields.Has("data_offsets")) return fields.Fail("data_offsets", "is missing");
  return ReadOffsets(value["data_offsets"], data_bytes, file, e);
}

Status CheckOverlaps(const char* file, std::vector<SafetensorsEntry>* tensors) {
  std::sort(tensors->begin(), tensors->end(),
            [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
              return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
            });
  for (size_t i = 1; i < tensors->size(); ++i) {
    const SafetensorsEntry& a = (*tensors)[i - 1];
    const SafetensorsEntry& b = (*tensors)[i];
    if (b.begin < a.end) {
      return Status::Error(
          StatusCode::kFormatError, "%s: tensors '%.60s' and '%.60s' overlap (bytes %llu … %llu)",
          file, a.name.c_str(), b.name.c_str(), static_cast<ull>(b.begin), static_cast<ull>(a.end));
    }
  }
  return Status::Ok();
}

}  // namespace

Status ParseSafetensorsHeader(const uint8_t* data, uint64_t size, const char* file,
                              SafetensorsHeader* out) {
  *out = SafetensorsHeader{};
  if (size < 8) {
    return Status::Error(StatusCode::kFormatError,
                         "%s: truncated: %llu bytes, shorter than the 8-byte header length", file,
                         static_cast<ull>(size));
  }
  uint64_t n = 0;
  std::memcpy(&n, data, 8);  // little-endian, as every platform staticlm builds for
  if (n > size - 8 || n > kMaxSafetensorsHeaderBytes) {
    return Status::Error(StatusCode::kFormatError,
                         "%s: header length %llu reaches beyond the file (%llu bytes) or the "
                         "%llu-byte limit",
                         file, static_cast<ull>(n), static_cast<ull>(size),
                         static_cast<ull>(kMaxSafetensorsHeaderBytes));
  }
  Json header;
  std::string_view text(reinterpret_cast<const char*>(data + 8), n);
  STATICLM_RETURN_IF_ERROR(ParseJson(text, file, &header));
  if (!header.is_object()) {
    return Status::Error(StatusCode::kFormatError, "%s: the header is %s, not a JSON object", file,
                         JsonTypeName(header));
  }
  out->data_start = 8 + n;
  const uint64_t data_bytes = size - out->data_start;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") continue;  // free-form strings (the format: "pt")
    SafetensorsEntry e;
    STATICLM_RETURN_IF_ERROR(ReadEntry(it.key(), it.value(), data_bytes, file, &e));
    out->tensors.push_back(std::move(e));
  }
  return CheckOverlaps(file, &out->tensors);
}

}  // namespace staticlm::hf
