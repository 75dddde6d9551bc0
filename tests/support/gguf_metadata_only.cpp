#include "tests/support/gguf_metadata_only.h"

#include <cstdio>
#include <cstring>

namespace staticlm::test {

namespace {

// Walks the encoded KV section; false when it runs past the end.
class Cursor {
 public:
  explicit Cursor(const std::vector<uint8_t>& b) : b_(b) {}
  size_t pos() const { return pos_; }
  void Seek(size_t p) { pos_ = p; }
  bool Skip(uint64_t n) {
    if (n > b_.size() - pos_) return false;
    pos_ += n;
    return true;
  }
  bool Read(void* out, size_t n) {
    if (n > b_.size() - pos_) return false;
    std::memcpy(out, b_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  bool SkipString() {
    uint64_t len = 0;
    return Read(&len, 8) && Skip(len);
  }
  bool SkipValue(uint32_t type) {
    static const uint8_t kSizes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    if (type == 8) return SkipString();
    if (type == 9) {
      uint32_t element = 0;
      uint64_t count = 0;
      if (!Read(&element, 4) || !Read(&count, 8)) return false;
      for (uint64_t i = 0; i < count; ++i) {
        if (element == 8 || element == 9) {
          if (!SkipValue(element)) return false;
        } else if (element < 13) {
          return Skip(count * kSizes[element]);
        } else {
          return false;
        }
      }
      return true;
    }
    return type < 13 && Skip(kSizes[type]);
  }

 private:
  const std::vector<uint8_t>& b_;
  size_t pos_ = 0;
};

}  // namespace

Status OpenMetadataOnly(const char* path, std::vector<uint8_t>* bytes, gguf::GgufFile* file) {
  FILE* f = std::fopen(path, "rb");
  if (f == nullptr) return Status::Error(StatusCode::kIoError, "%s: cannot open", path);
  bytes->clear();
  std::vector<uint8_t> chunk(size_t{1} << 22);
  // Metadata sits at the front; read until the KV section has been walked.
  size_t n = 0;
  uint64_t kv_count = 0;
  for (;;) {
    n = std::fread(chunk.data(), 1, chunk.size(), f);
    bytes->insert(bytes->end(), chunk.begin(), chunk.begin() + static_cast<ptrdiff_t>(n));
    if (bytes->size() >= 24) {
      std::memcpy(&kv_count, bytes->data() + 16, 8);
      Cursor c(*bytes);
      c.Seek(24);
      bool complete = true;
      for (uint64_t i = 0; i < kv_count && complete; ++i) {
        uint32_t type = 0;
        complete = c.SkipString() && c.Read(&type, 4) && c.SkipValue(type);
      }
      if (complete) {
        bytes->resize(c.pos());
        break;
      }
    }
    if (n == 0) {
      std::fclose(f);
      return Status::Error(StatusCode::kFormatError, "%s: metadata runs past the end", path);
    }
  }
  std::fclose(f);
  std::memset(bytes->data() + 8, 0, 8);  // no tensors
  return file->Parse(bytes->data(), bytes->size());
}

}  // namespace staticlm::test
