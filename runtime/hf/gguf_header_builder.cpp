#include "runtime/hf/gguf_header_builder.h"

#include <cstring>

#include "runtime/gguf/gguf_types.h"

namespace staticlm::hf {

void GgufHeaderBuilder::Bytes(const void* p, size_t n) {
  // resize and memcpy rather than insert: GCC 12 misreads small inserts as overflows.
  if (n == 0) return;
  const size_t at = out_->size();
  out_->resize(at + n);
  std::memcpy(out_->data() + at, p, n);
}

void GgufHeaderBuilder::String(std::string_view s) {
  uint64_t n = s.size();
  Bytes(&n, 8);
  Bytes(s.data(), s.size());
}

void GgufHeaderBuilder::Key(std::string_view key, uint32_t type) {
  out_ = &keys_;
  String(key);
  Bytes(&type, 4);
  ++n_keys_;
}

void GgufHeaderBuilder::AddU32(std::string_view key, uint32_t value) {
  Key(key, static_cast<uint32_t>(gguf::ValueType::kU32));
  Bytes(&value, 4);
}

void GgufHeaderBuilder::AddF32(std::string_view key, float value) {
  Key(key, static_cast<uint32_t>(gguf::ValueType::kF32));
  Bytes(&value, 4);
}

void GgufHeaderBuilder::AddBool(std::string_view key, bool value) {
  Key(key, static_cast<uint32_t>(gguf::ValueType::kBool));
  uint8_t b = value ? 1 : 0;
  Bytes(&b, 1);
}

void GgufHeaderBuilder::AddString(std::string_view key, std::string_view value) {
  Key(key, static_cast<uint32_t>(gguf::ValueType::kString));
  String(value);
}

void GgufHeaderBuilder::AddTensor(std::string_view name, const int64_t* ne, uint32_t n_dims,
                                  DType type, uint64_t offset) {
  out_ = &tensors_;
  String(name);
  Bytes(&n_dims, 4);
  for (uint32_t d = 0; d < n_dims; ++d) Bytes(&ne[d], 8);
  uint32_t type_id = static_cast<uint32_t>(type);
  Bytes(&type_id, 4);
  Bytes(&offset, 8);
  ++n_tensors_;
}

std::vector<uint8_t> GgufHeaderBuilder::Finish() const {
  uint8_t head[24];
  const uint32_t magic = gguf::kMagic, version = 3;
  std::memcpy(head, &magic, 4);
  std::memcpy(head + 4, &version, 4);
  std::memcpy(head + 8, &n_tensors_, 8);
  std::memcpy(head + 16, &n_keys_, 8);
  std::vector<uint8_t> out(sizeof(head) + keys_.size() + tensors_.size());
  std::memcpy(out.data(), head, sizeof(head));
  if (!keys_.empty()) std::memcpy(out.data() + sizeof(head), keys_.data(), keys_.size());
  if (!tensors_.empty()) {
    std::memcpy(out.data() + sizeof(head) + keys_.size(), tensors_.data(), tensors_.size());
  }
  return out;
}

}  // namespace staticlm::hf
