// GgufFile::AddComputedTensor: a tensor the model implies, placed after the file's bytes.
#include <cstring>

#include "runtime/gguf/gguf_file.h"
#include "runtime/gguf/gguf_parse.h"

namespace staticlm::gguf {
namespace {

uint64_t RoundUp(uint64_t v, uint64_t a) {
  return (v + a - 1) / a * a;
}

}  // namespace

Status GgufFile::AddComputedTensor(std::string_view name, const float* values, uint64_t count) {
  if (path_.empty() || stitched_.data() != nullptr || count == 0) {
    return Status::Error(StatusCode::kInternal, "a computed tensor needs a file opened once");
  }
  if (FindTensor(name) != nullptr) {
    return Status::Error(StatusCode::kFormatError, "tensor '%s' is in the file already",
                         Printable(name).text);
  }
  // The file at the start of a reservation, the tensor at the first multiple of the
  // alignment (from the data section's start) on a page after it.
  const uint64_t page = StitchedMap::PageBytes(), size = file_bytes_;
  const uint64_t tail = RoundUp(size, page);
  const uint64_t at = tensor_data_offset_ + RoundUp(tail - tensor_data_offset_, alignment_);
  const uint64_t bytes = 4 * count;
  const uint64_t end = RoundUp(at + bytes, page);
  StitchedMap map;
  STATICLM_RETURN_IF_ERROR(map.Reserve(end));
  STATICLM_RETURN_IF_ERROR(map.MapFile(path_.c_str(), 0, size));
  STATICLM_RETURN_IF_ERROR(map.MapAnonymous(tail, end - tail));
  std::memcpy(map.data() + at, values, bytes);
  STATICLM_RETURN_IF_ERROR(map.Seal(tail, end - tail));
  // The same bytes again (ParseBytes checks them as it did at Open), now in the new mapping.
  std::string path = std::move(path_);
  Reset();
  Status s = ParseBytes(map.data(), size);
  if (!s.ok()) return Status::Error(s.code(), "%s: %s", path.c_str(), s.message());
  path_ = std::move(path);
  stitched_ = std::move(map);

  TensorInfo t;
  t.name = name;
  t.n_dims = 1;
  t.ne[0] = static_cast<int64_t>(count);
  t.type = DType::kF32;
  t.offset = at - tensor_data_offset_;
  t.bytes = bytes;
  t.data = tensor_data_ + t.offset;
  tensors_.push_back(t);
  tensor_data_bytes_ = t.offset + bytes;
  std::vector<std::string_view> names;
  names.reserve(tensors_.size());
  for (const TensorInfo& info : tensors_) names.push_back(info.name);
  return SortUniqueNames(names, "tensor", &tensor_order_);
}

}  // namespace staticlm::gguf
