// Tensor infos and their placement in the data section.
#include <algorithm>
#include <cinttypes>

#include "runtime/gguf/gguf_parse.h"

namespace staticlm::gguf {

namespace {

using ull = unsigned long long;

// name length, n_dims, one dim, type, offset
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;

Status UnsupportedType(std::string_view name, uint32_t type) {
  const char* ggml_name = GgmlTypeName(type);
  if (ggml_name == nullptr) {
    return Status::Error(StatusCode::kUnsupported, "tensor '%s' has unknown ggml type %" PRIu32,
                         Printable(name).text, type);
  }
  return Status::Error(StatusCode::kUnsupported,
                       "tensor '%s' has type %s (%" PRIu32
                       "), which staticlm does not support (F32, F16, BF16, Q8_0, Q6_K, Q5_0, "
                       "Q5_1, Q5_K, Q4_0, Q4_1, Q4_K, I32)",
                       Printable(name).text, ggml_name, type);
}

Status ParseTensorInfo(ByteReader& r, uint64_t index, TensorInfo* t) {
  uint64_t at = r.pos();
  uint64_t len = 0;
  if (!r.Read(&len)) {
    return Fail(Numbered("tensor", index), at, "truncated: name length needs 8 bytes");
  }
  if (len == 0 || len > kMaxTensorNameBytes) {
    return Fail(Numbered("tensor", index), at, "name length %llu is not in 1..%llu",
                static_cast<ull>(len), static_cast<ull>(kMaxTensorNameBytes));
  }
  if (len > r.remaining()) {
    return Fail(Numbered("tensor", index), at, "name length %llu exceeds the %llu bytes left",
                static_cast<ull>(len), static_cast<ull>(r.remaining()));
  }
  t->name = std::string_view(reinterpret_cast<const char*>(r.cursor()), len);
  r.Skip(len);
  Subject subject = Named("tensor", t->name);

  uint64_t dims_at = r.pos();
  if (!r.Read(&t->n_dims)) return Fail(subject, dims_at, "truncated: n_dims needs 4 bytes");
  if (t->n_dims == 0 || t->n_dims > kMaxDims) {
    return Fail(subject, dims_at, "n_dims %" PRIu32 " is not in 1..%" PRIu32, t->n_dims, kMaxDims);
  }
  int64_t elements = 1;
  for (uint32_t d = 0; d < t->n_dims; ++d) {
    uint64_t dim_at = r.pos();
    uint64_t ne = 0;
    if (!r.Read(&ne)) return Fail(subject, dim_at, "truncated: ne[%" PRIu32 "] needs 8 bytes", d);
    if (ne == 0 || ne > static_cast<uint64_t>(INT64_MAX)) {
      return Fail(subject, dim_at, "ne[%" PRIu32 "] = %llu is not a positive int64", d,
                  static_cast<ull>(ne));
    }
    t->ne[d] = static_cast<int64_t>(ne);
    if (__builtin_mul_overflow(elements, t->ne[d], &elements)) {
      return Fail(subject, dim_at, "element count overflows int64 at ne[%" PRIu32 "]", d);
    }
  }

  uint64_t type_at = r.pos();
  uint32_t type = 0;
  if (!r.Read(&type)) return Fail(subject, type_at, "truncated: type needs 4 bytes");
  if (!IsKnownDType(type)) return UnsupportedType(t->name, type);
  t->type = static_cast<DType>(type);
  DTypeInfo info = GetDTypeInfo(t->type);
  // Rows are whole blocks in ggml's layout, so the innermost dim (not just the total) must be
  // a multiple of the block size.
  if (t->ne[0] % info.block_elements != 0) {
    return Fail(subject, type_at,
                "ne[0] = %lld is not a multiple of %s's block of %" PRIu32 " elements",
                static_cast<long long>(t->ne[0]), info.name, info.block_elements);
  }
  uint64_t blocks = static_cast<uint64_t>(elements) / info.block_elements;
  if (__builtin_mul_overflow(blocks, static_cast<uint64_t>(info.block_bytes), &t->bytes)) {
    return Fail(subject, type_at, "byte size of %lld %s elements overflows",
                static_cast<long long>(elements), info.name);
  }

  uint64_t offset_at = r.pos();
  if (!r.Read(&t->offset)) return Fail(subject, offset_at, "truncated: offset needs 8 bytes");
  return Status::Ok();
}

}  // namespace

Status ParseTensorInfos(ByteReader& r, uint64_t count, std::vector<TensorInfo>* out) {
  if (count > r.remaining() / kMinTensorInfoBytes || count > UINT32_MAX) {
    return Status::Error(StatusCode::kFormatError,
                         "header at byte 8: tensor_count %llu cannot fit in the %llu bytes "
                         "left after the metadata (truncated or corrupt file)",
                         static_cast<ull>(count), static_cast<ull>(r.remaining()));
  }
  out->clear();
  out->reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    TensorInfo t;
    STATICLM_RETURN_IF_ERROR(ParseTensorInfo(r, i, &t));
    out->push_back(t);
  }
  return Status::Ok();
}

Status PlaceTensors(const uint8_t* data, uint64_t data_bytes, uint32_t alignment,
                    std::vector<TensorInfo>* tensors) {
  for (TensorInfo& t : *tensors) {
    if (t.offset % alignment != 0) {
      return Status::Error(StatusCode::kFormatError,
                           "tensor '%s': data offset %llu is not a multiple of the alignment %u",
                           Printable(t.name).text, static_cast<ull>(t.offset), alignment);
    }
    if (t.offset > data_bytes || t.bytes > data_bytes - t.offset) {
      return Status::Error(StatusCode::kFormatError,
                           "tensor '%s': data [%llu, +%llu) lies outside the data section of "
                           "%llu bytes",
                           Printable(t.name).text, static_cast<ull>(t.offset),
                           static_cast<ull>(t.bytes), static_cast<ull>(data_bytes));
    }
    t.data = data + t.offset;
  }
  std::vector<const TensorInfo*> by_offset;
  by_offset.reserve(tensors->size());
  for (const TensorInfo& t : *tensors) by_offset.push_back(&t);
  // Stable, so tensors at the same offset are reported in file order.
  std::stable_sort(by_offset.begin(), by_offset.end(),
                   [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const TensorInfo* prev = by_offset[i - 1];
    const TensorInfo* next = by_offset[i];
    if (prev->offset + prev->bytes > next->offset) {
      return Status::Error(StatusCode::kFormatError,
                           "tensors '%s' [%llu, +%llu) and '%s' [%llu, +%llu) overlap",
                           Printable(prev->name).text, static_cast<ull>(prev->offset),
                           static_cast<ull>(prev->bytes), Printable(next->name).text,
                           static_cast<ull>(next->offset), static_cast<ull>(next->bytes));
    }
  }
  return Status::Ok();
}

Status SortUniqueNames(const std::vector<std::string_view>& names, const char* what,
                       std::vector<uint32_t>* order) {
  order->resize(names.size());
  for (size_t i = 0; i < names.size(); ++i) (*order)[i] = static_cast<uint32_t>(i);
  std::sort(order->begin(), order->end(),
            [&](uint32_t a, uint32_t b) { return names[a] < names[b]; });
  for (size_t i = 1; i < order->size(); ++i) {
    if (names[(*order)[i - 1]] == names[(*order)[i]]) {
      return Status::Error(StatusCode::kFormatError, "duplicate %s '%s' (entries #%u and #%u)",
                           what, Printable(names[(*order)[i]]).text,
                           std::min((*order)[i - 1], (*order)[i]),
                           std::max((*order)[i - 1], (*order)[i]));
    }
  }
  return Status::Ok();
}

}  // namespace staticlm::gguf
