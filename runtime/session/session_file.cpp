#include "runtime/session/session_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace staticlm {
namespace {

constexpr char kMagic[8] = {'S', 'L', 'M', 'S', 'E', 'S', 'S', '\0'};

uint64_t Fnv1a(const uint8_t* data, size_t n) {
  StreamChecksum c;
  c.Add(data, n);
  return c.value();
}

// Fixed-offset fields: a cursor over the header bytes.
class Cursor {
 public:
  explicit Cursor(uint8_t* p) : p_(p) {}
  template <typename T>
  void Put(T v) {
    std::memcpy(p_ + pos_, &v, sizeof(T));
    pos_ += sizeof(T);
  }
  template <typename T>
  T Get() {
    T v;
    std::memcpy(&v, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

 private:
  uint8_t* p_;
  size_t pos_ = 0;
};

constexpr size_t kChecksumOffset = kSessionHeaderBytes - 8;

}  // namespace

void EncodeSessionHeader(const SessionHeader& h, uint8_t out[kSessionHeaderBytes]) {
  std::memset(out, 0, kSessionHeaderBytes);
  std::memcpy(out, kMagic, sizeof(kMagic));
  Cursor c(out + sizeof(kMagic));
  c.Put<uint32_t>(h.version);
  c.Put<uint32_t>(static_cast<uint32_t>(kSessionHeaderBytes));
  c.Put<uint64_t>(h.model_fingerprint);
  c.Put<uint64_t>(h.plan_hash);
  c.Put<int32_t>(h.window);
  c.Put<int32_t>(h.sinks);
  c.Put<uint32_t>(h.kv_dtype);
  c.Put<int32_t>(h.max_context);
  c.Put<int32_t>(h.vocab_size);
  c.Put<int32_t>(h.position);
  c.Put<uint32_t>((h.have_logits ? 1u : 0u) | (h.kv_prefix ? 2u : 0u));
  c.Put<uint32_t>(h.n_pending);
  c.Put<uint64_t>(h.kv_bytes);
  for (uint64_t w : h.rng_state) c.Put<uint64_t>(w);
  for (uint8_t b : h.pending) c.Put<uint8_t>(b);
  c.Put<uint32_t>(0);  // reserved
  c.Put<uint64_t>(h.payload_bytes);
  c.Put<uint64_t>(h.payload_checksum);
  uint64_t checksum = Fnv1a(out, kChecksumOffset);
  std::memcpy(out + kChecksumOffset, &checksum, sizeof(checksum));
}

Status DecodeSessionHeader(const uint8_t in[kSessionHeaderBytes], SessionHeader* h) {
  if (std::memcmp(in, kMagic, sizeof(kMagic)) != 0) {
    return Status::Error(StatusCode::kFormatError, "not a staticlm session file (bad magic)");
  }
  uint8_t copy[kSessionHeaderBytes];
  std::memcpy(copy, in, kSessionHeaderBytes);
  Cursor c(copy + sizeof(kMagic));
  h->version = c.Get<uint32_t>();
  uint32_t header_bytes = c.Get<uint32_t>();
  if (h->version != kSessionFormatVersion) {
    return Status::Error(StatusCode::kUnsupported,
                         "session file format version %u; this staticlm reads version %u",
                         h->version, kSessionFormatVersion);
  }
  uint64_t stored = 0;
  std::memcpy(&stored, copy + kChecksumOffset, sizeof(stored));
  if (header_bytes != kSessionHeaderBytes || Fnv1a(copy, kChecksumOffset) != stored) {
    return Status::Error(StatusCode::kFormatError, "session file header is corrupted");
  }
  h->model_fingerprint = c.Get<uint64_t>();
  h->plan_hash = c.Get<uint64_t>();
  h->window = c.Get<int32_t>();
  h->sinks = c.Get<int32_t>();
  h->kv_dtype = c.Get<uint32_t>();
  h->max_context = c.Get<int32_t>();
  h->vocab_size = c.Get<int32_t>();
  h->position = c.Get<int32_t>();
  uint32_t flags = c.Get<uint32_t>();
  h->have_logits = (flags & 1u) != 0;
  h->kv_prefix = (flags & 2u) != 0;
  h->n_pending = c.Get<uint32_t>();
  h->kv_bytes = c.Get<uint64_t>();
  for (uint64_t& w : h->rng_state) w = c.Get<uint64_t>();
  for (uint8_t& b : h->pending) b = c.Get<uint8_t>();
  (void)c.Get<uint32_t>();
  h->payload_bytes = c.Get<uint64_t>();
  h->payload_checksum = c.Get<uint64_t>();
  if ((flags & ~3u) != 0 || h->n_pending > 3) {
    return Status::Error(StatusCode::kFormatError, "session file header is malformed");
  }
  return Status::Ok();
}

SessionReader::~SessionReader() {
  if (fd_ >= 0) ::close(fd_);
}

Status SessionReader::Open(const char* path) {
  std::snprintf(path_, sizeof(path_), "%s", path);
  fd_ = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) {
    return Status::Error(StatusCode::kIoError, "cannot open %s: %s", path, std::strerror(errno));
  }
  struct stat st;
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    return Status::Error(StatusCode::kIoError, "%s is not a regular file", path);
  }
  size_ = static_cast<uint64_t>(st.st_size);
  return Status::Ok();
}

Status SessionReader::Read(void* out, size_t bytes) {
  uint8_t* p = static_cast<uint8_t*>(out);
  size_t left = bytes;
  while (left > 0) {
    ssize_t n = ::read(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return Status::Error(StatusCode::kIoError, "cannot read %s: %s", path_, std::strerror(errno));
    }
    if (n == 0) return Status::Error(StatusCode::kFormatError, "%s is truncated", path_);
    p += n;
    left -= static_cast<size_t>(n);
  }
  checksum_.Add(out, bytes);
  return Status::Ok();
}

Status SessionReader::Seek(uint64_t offset) {
  if (::lseek(fd_, static_cast<off_t>(offset), SEEK_SET) < 0) {
    return Status::Error(StatusCode::kIoError, "cannot read %s: %s", path_, std::strerror(errno));
  }
  checksum_ = StreamChecksum();
  return Status::Ok();
}

}  // namespace staticlm
