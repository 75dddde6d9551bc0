// Session files: a conversation saved to disk and loaded back, in another process, to continue
// with exactly the output an uninterrupted run would give.
//
// Layout (little-endian): a 192-byte header, then the payload.
//   header: magic "SLMSESS\0", format version, header bytes, the model's fingerprint, the plan
//           hash (runtime/plan/plan_hash.h), the cache policy (window, sinks, KV dtype), the
//           context and vocabulary sizes, the position, flags (logits present, prefix layout),
//           the stored KV bytes, the sampler's random state, the detokenizer's held bytes, the
//           payload size and its FNV-1a checksum, and last an FNV-1a checksum of the header.
//   payload: the token history (max_context int32), the last logits (vocab f32, when present),
//            then the KV cache regions in CacheRegions order.
// Reading is a bounded, validating parse: another model, plan, policy or format version, a
// truncation or a changed byte is a clear error. Nothing here allocates: files are read and
// written with POSIX calls through caller-owned buffers.
#pragma once

#include <cstddef>
#include <cstdint>

#include "platform/status.h"

namespace staticlm {

constexpr uint32_t kSessionFormatVersion = 1;
constexpr size_t kSessionHeaderBytes = 192;

struct SessionHeader {
  uint32_t version = kSessionFormatVersion;
  uint64_t model_fingerprint = 0;
  uint64_t plan_hash = 0;
  int32_t window = 0;
  int32_t sinks = 0;
  uint32_t kv_dtype = 0;
  int32_t max_context = 0;
  int32_t vocab_size = 0;
  int32_t position = 0;
  bool have_logits = false;
  bool kv_prefix = false;  // the KV regions are the first `position` slots of each head row
  uint64_t kv_bytes = 0;   // stored KV bytes
  uint64_t rng_state[4] = {0, 0, 0, 0};
  uint8_t pending[4] = {0, 0, 0, 0};  // detokenizer held bytes
  uint32_t n_pending = 0;
  uint64_t payload_bytes = 0;
  uint64_t payload_checksum = 0;
};

// Writes the header (with its own checksum) into `out`.
void EncodeSessionHeader(const SessionHeader& header, uint8_t out[kSessionHeaderBytes]);
// Checks magic, version and the header checksum, then fills `header`.
Status DecodeSessionHeader(const uint8_t in[kSessionHeaderBytes], SessionHeader* header);

// FNV-1a over a byte stream fed in pieces of any size.
class StreamChecksum {
 public:
  void Add(const void* data, size_t bytes) {
    const uint8_t* p = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < bytes; ++i) h_ = (h_ ^ p[i]) * 0x100000001b3ull;
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0xcbf29ce484222325ull;
};

// A file read front to back (and rewound for a second pass), with a running checksum.
class SessionReader {
 public:
  SessionReader() = default;
  ~SessionReader();
  SessionReader(const SessionReader&) = delete;
  SessionReader& operator=(const SessionReader&) = delete;

  // kIoError when `path` cannot be opened or is not a regular file.
  Status Open(const char* path);
  uint64_t size() const { return size_; }
  // Reads exactly `bytes` bytes (adding them to the checksum); kFormatError at end of file.
  Status Read(void* out, size_t bytes);
  // Seeks to `offset` and restarts the checksum.
  Status Seek(uint64_t offset);
  uint64_t checksum() const { return checksum_.value(); }
  const char* path() const { return path_; }

 private:
  int fd_ = -1;
  uint64_t size_ = 0;
  StreamChecksum checksum_;
  char path_[256] = {0};  // for messages (truncated)
};

}  // namespace staticlm
