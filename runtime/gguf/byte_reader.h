// ByteReader: a bounded little-endian cursor over borrowed bytes. Every read checks the
// remaining length first, so a hostile length can move the cursor only to the end.
// Internal to the GGUF reader; never allocates.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace staticlm::gguf {

static_assert(std::endian::native == std::endian::little,
              "the GGUF reader copies little-endian values as they are");

class ByteReader {
 public:
  ByteReader(const uint8_t* data, uint64_t size) : data_(data), size_(size) {}

  uint64_t pos() const { return pos_; }
  uint64_t size() const { return size_; }
  uint64_t remaining() const { return size_ - pos_; }
  const uint8_t* cursor() const { return data_ + pos_; }

  // Copies one value and advances; returns false (cursor unchanged) if too few bytes remain.
  template <typename T>
  bool Read(T* out) {
    if (remaining() < sizeof(T)) return false;
    std::memcpy(out, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }

  // Advances `n` bytes; returns false (cursor unchanged) if fewer remain.
  bool Skip(uint64_t n) {
    if (remaining() < n) return false;
    pos_ += n;
    return true;
  }

 private:
  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

// Loads a little-endian value from `p`, which the caller has already bounds-checked.
template <typename T>
inline T LoadLe(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

}  // namespace staticlm::gguf
