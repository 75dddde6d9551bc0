#include "runtime/gguf/gguf_file.h"

#include <algorithm>

#include "runtime/gguf/gguf_parse.h"

namespace staticlm::gguf {

namespace {

// Binary search over `order`, indices of `items` sorted by `name_of(item)`.
template <typename T, typename NameOf>
const T* FindSorted(const std::vector<T>& items, const std::vector<uint32_t>& order,
                    std::string_view name, NameOf name_of) {
  auto it = std::lower_bound(order.begin(), order.end(), name,
                             [&](uint32_t i, std::string_view n) { return name_of(items[i]) < n; });
  if (it == order.end() || name_of(items[*it]) != name) return nullptr;
  return &items[*it];
}

}  // namespace

GgufFile& GgufFile::operator=(GgufFile&& other) noexcept {
  if (this == &other) return *this;
  Reset();
  map_ = std::move(other.map_);
  path_ = std::move(other.path_);
  stitched_ = std::move(other.stitched_);
  owned_header_ = std::move(other.owned_header_);
  file_data_ = other.file_data_;
  file_bytes_ = other.file_bytes_;
  version_ = other.version_;
  alignment_ = other.alignment_;
  tensor_data_ = other.tensor_data_;
  tensor_data_offset_ = other.tensor_data_offset_;
  tensor_data_bytes_ = other.tensor_data_bytes_;
  keys_ = std::move(other.keys_);
  tensors_ = std::move(other.tensors_);
  key_order_ = std::move(other.key_order_);
  tensor_order_ = std::move(other.tensor_order_);
  other.Reset();
  return *this;
}

Status GgufFile::Open(const char* path) {
  Reset();
  STATICLM_RETURN_IF_ERROR(map_.Open(path));
  Status s = ParseBytes(map_.data(), map_.size());
  if (!s.ok()) {
    Status with_path = Status::Error(s.code(), "%s: %s", path, s.message());
    Reset();
    return with_path;
  }
  path_ = path;
  return s;
}

Status GgufFile::Parse(const uint8_t* data, size_t size) {
  Reset();
  Status s = ParseBytes(data, size);
  if (!s.ok()) Reset();
  return s;
}

Status GgufFile::AdoptHeader(std::vector<uint8_t> header, const uint8_t* data,
                             uint64_t data_bytes) {
  Reset();
  owned_header_ = std::move(header);
  uint64_t infos_end = 0;
  Status s = ParseHeaderBytes(owned_header_.data(), owned_header_.size(), &infos_end);
  if (s.ok()) {
    tensor_data_offset_ = 0;
    tensor_data_ = data;
    tensor_data_bytes_ = data_bytes;
    s = PlaceTensors(tensor_data_, tensor_data_bytes_, alignment_, &tensors_);
  }
  if (!s.ok()) Reset();
  return s;
}

void GgufFile::Reset() {
  map_.Close();
  path_.clear();
  stitched_.Close();
  owned_header_ = {};
  file_data_ = nullptr;
  file_bytes_ = 0;
  version_ = 0;
  alignment_ = kDefaultAlignment;
  tensor_data_ = nullptr;
  tensor_data_offset_ = 0;
  tensor_data_bytes_ = 0;
  keys_.clear();
  tensors_.clear();
  key_order_.clear();
  tensor_order_.clear();
}

// Magic, metadata and tensor infos; `infos_end` is where the infos end.
Status GgufFile::ParseHeaderBytes(const uint8_t* data, size_t size, uint64_t* infos_end) {
  if (size == 0) return Status::Error(StatusCode::kFormatError, "not a GGUF file: it is empty");
  file_data_ = data;
  file_bytes_ = size;
  ByteReader r(data, size);

  uint64_t tensor_count = 0;
  uint64_t kv_count = 0;
  STATICLM_RETURN_IF_ERROR(ParseHeader(r, &version_, &tensor_count, &kv_count));
  STATICLM_RETURN_IF_ERROR(ParseKeyValues(r, kv_count, &keys_));
  std::vector<std::string_view> names;
  names.reserve(keys_.size());
  for (const KeyValue& kv : keys_) names.push_back(kv.key);
  STATICLM_RETURN_IF_ERROR(SortUniqueNames(names, "key", &key_order_));
  STATICLM_RETURN_IF_ERROR(ReadAlignment());

  STATICLM_RETURN_IF_ERROR(ParseTensorInfos(r, tensor_count, &tensors_));
  names.clear();
  for (const TensorInfo& t : tensors_) names.push_back(t.name);
  STATICLM_RETURN_IF_ERROR(SortUniqueNames(names, "tensor", &tensor_order_));
  *infos_end = r.pos();
  return Status::Ok();
}

Status GgufFile::ParseBytes(const uint8_t* data, size_t size) {
  uint64_t infos_end = 0;
  STATICLM_RETURN_IF_ERROR(ParseHeaderBytes(data, size, &infos_end));
  // The data section starts at the first multiple of the alignment after the infos. A file
  // without tensors may end before that padding.
  uint64_t data_start = (infos_end + alignment_ - 1) / alignment_ * alignment_;
  if (data_start > file_bytes_) {
    if (!tensors_.empty()) {
      return Status::Error(StatusCode::kFormatError,
                           "truncated: tensor data would start at byte %llu, past the end of "
                           "the file (%llu bytes)",
                           static_cast<unsigned long long>(data_start),
                           static_cast<unsigned long long>(file_bytes_));
    }
    data_start = file_bytes_;
  }
  tensor_data_offset_ = data_start;
  tensor_data_ = data + data_start;
  tensor_data_bytes_ = file_bytes_ - data_start;
  return PlaceTensors(tensor_data_, tensor_data_bytes_, alignment_, &tensors_);
}

Status GgufFile::ReadAlignment() {
  alignment_ = kDefaultAlignment;
  const KeyValue* kv = FindKey("general.alignment");
  if (kv == nullptr) return Status::Ok();
  if (kv->type != ValueType::kU32) {
    return Status::Error(StatusCode::kFormatError,
                         "key 'general.alignment': expected u32, found %s",
                         ValueTypeName(kv->type));
  }
  uint32_t a = LoadLe<uint32_t>(kv->value);
  if (a == 0 || (a & (a - 1)) != 0) {
    return Status::Error(StatusCode::kFormatError,
                         "key 'general.alignment' is %u, which is not a power of two", a);
  }
  alignment_ = a;
  return Status::Ok();
}

const KeyValue* GgufFile::FindKey(std::string_view key) const {
  return FindSorted(keys_, key_order_, key, [](const KeyValue& kv) { return kv.key; });
}

const TensorInfo* GgufFile::FindTensor(std::string_view name) const {
  return FindSorted(tensors_, tensor_order_, name, [](const TensorInfo& t) { return t.name; });
}

Status GgufFile::RequireTensor(std::string_view name, const TensorInfo** out) const {
  *out = FindTensor(name);
  if (*out == nullptr) {
    return Status::Error(StatusCode::kFormatError, "missing tensor '%s'", Printable(name).text);
  }
  return Status::Ok();
}

}  // namespace staticlm::gguf
