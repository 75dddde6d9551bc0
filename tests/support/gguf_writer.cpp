#include "tests/support/gguf_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace staticlm::test {

namespace {

// Byte by byte: GCC 12's -Wstringop-overflow misfires on resize-then-memcpy at -O3.
template <typename T>
void Append(std::vector<uint8_t>* out, T v) {
  uint8_t bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));
  for (uint8_t b : bytes) out->push_back(b);
}

void AppendBytes(std::vector<uint8_t>* out, const void* data, size_t n) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  out->insert(out->end(), p, p + n);
}

void AppendString(std::vector<uint8_t>* out, const std::string& s) {
  Append<uint64_t>(out, s.size());
  AppendBytes(out, s.data(), s.size());
}

uint64_t AlignUp(uint64_t v, uint64_t alignment) {
  if (alignment == 0) return v;  // a deliberately bad alignment: write unpadded
  return (v + alignment - 1) / alignment * alignment;
}

}  // namespace

void GgufWriter::SetAlignment(uint32_t alignment) {
  alignment_ = alignment;
  write_alignment_key_ = true;
}

void GgufWriter::AddScalar(const std::string& key, gguf::ValueType type, const void* v,
                           size_t bytes) {
  std::vector<uint8_t> encoded;
  AppendBytes(&encoded, v, bytes);
  kvs_.push_back({key, static_cast<uint32_t>(type), std::move(encoded)});
}

void GgufWriter::AddBool(const std::string& key, bool v) {
  uint8_t b = v ? 1 : 0;
  AddScalar(key, gguf::ValueType::kBool, &b, 1);
}

void GgufWriter::AddString(const std::string& key, const std::string& v) {
  std::vector<uint8_t> encoded;
  AppendString(&encoded, v);
  kvs_.push_back({key, static_cast<uint32_t>(gguf::ValueType::kString), std::move(encoded)});
}

void GgufWriter::AddStringArray(const std::string& key, const std::vector<std::string>& v) {
  std::vector<uint8_t> encoded;
  Append<uint32_t>(&encoded, static_cast<uint32_t>(gguf::ValueType::kString));
  Append<uint64_t>(&encoded, v.size());
  for (const std::string& s : v) AppendString(&encoded, s);
  kvs_.push_back({key, static_cast<uint32_t>(gguf::ValueType::kArray), std::move(encoded)});
}

void GgufWriter::AddArray(const std::string& key, gguf::ValueType element_type,
                          const void* elements, uint64_t count) {
  std::vector<uint8_t> encoded;
  Append<uint32_t>(&encoded, static_cast<uint32_t>(element_type));
  Append<uint64_t>(&encoded, count);
  AppendBytes(&encoded, elements, count * gguf::ScalarBytes(element_type));
  kvs_.push_back({key, static_cast<uint32_t>(gguf::ValueType::kArray), std::move(encoded)});
}

void GgufWriter::AddRaw(const std::string& key, uint32_t type, std::vector<uint8_t> encoded) {
  kvs_.push_back({key, type, std::move(encoded)});
}

size_t GgufWriter::AddTensor(const std::string& name, const std::vector<int64_t>& ne, uint32_t type,
                             std::vector<uint8_t> data) {
  tensors_.push_back({name, ne, type, std::move(data), std::nullopt});
  return tensors_.size() - 1;
}

void GgufWriter::OverrideTensorOffset(size_t index, uint64_t offset) {
  tensors_.at(index).offset_override = offset;
}

std::vector<GgufWriter::Kv> GgufWriter::AllKeys() const {
  std::vector<Kv> all = kvs_;
  if (write_alignment_key_) {
    std::vector<uint8_t> encoded;
    Append<uint32_t>(&encoded, alignment_);
    all.push_back({"general.alignment", static_cast<uint32_t>(gguf::ValueType::kU32), encoded});
  }
  return all;
}

std::vector<uint64_t> GgufWriter::DataOffsets() const {
  std::vector<uint64_t> offsets;
  uint64_t at = 0;
  for (const Tensor& t : tensors_) {
    offsets.push_back(at);
    at = AlignUp(at + t.data.size(), alignment_);
  }
  return offsets;
}

void GgufWriter::AppendHeaderAndInfos(std::vector<uint8_t>* out) const {
  std::vector<Kv> keys = AllKeys();
  Append<uint32_t>(out, gguf::kMagic);
  Append<uint32_t>(out, version_);
  Append<uint64_t>(out, tensors_.size());
  Append<uint64_t>(out, keys.size());
  for (const Kv& kv : keys) {
    AppendString(out, kv.key);
    Append<uint32_t>(out, kv.type);
    AppendBytes(out, kv.encoded.data(), kv.encoded.size());
  }
  std::vector<uint64_t> offsets = DataOffsets();
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const Tensor& t = tensors_[i];
    AppendString(out, t.name);
    Append<uint32_t>(out, static_cast<uint32_t>(t.ne.size()));
    for (int64_t d : t.ne) Append<int64_t>(out, d);
    Append<uint32_t>(out, t.type);
    Append<uint64_t>(out, t.offset_override.value_or(offsets[i]));
  }
}

uint64_t GgufWriter::DataSectionOffset() const {
  std::vector<uint8_t> head;
  AppendHeaderAndInfos(&head);
  return AlignUp(head.size(), alignment_);
}

std::vector<uint8_t> GgufWriter::Serialize() const {
  std::vector<uint8_t> out;
  AppendHeaderAndInfos(&out);
  // Like ggml's writer: the data section starts aligned and each tensor is padded to the
  // alignment, including the last.
  out.resize(AlignUp(out.size(), alignment_), 0);
  uint64_t data_start = out.size();
  std::vector<uint64_t> offsets = DataOffsets();
  for (size_t i = 0; i < tensors_.size(); ++i) {
    out.resize(data_start + offsets[i], 0);
    AppendBytes(&out, tensors_[i].data.data(), tensors_[i].data.size());
    out.resize(AlignUp(out.size(), alignment_), 0);
  }
  return out;
}

Status GgufWriter::WriteFile(const char* path) const {
  return WriteBytes(path, Serialize());
}

Status WriteBytes(const char* path, const std::vector<uint8_t>& bytes) {
  FILE* f = std::fopen(path, "wb");
  if (f == nullptr) {
    return Status::Error(StatusCode::kIoError, "cannot create %s: %s", path, std::strerror(errno));
  }
  size_t written = bytes.empty() ? 0 : std::fwrite(bytes.data(), 1, bytes.size(), f);
  bool ok = written == bytes.size();
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) return Status::Error(StatusCode::kIoError, "cannot write %s", path);
  return Status::Ok();
}

}  // namespace staticlm::test
