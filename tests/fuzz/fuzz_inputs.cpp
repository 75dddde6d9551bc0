#include "tests/fuzz/fuzz_inputs.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "runtime/session/session_file.h"
#include "tests/support/gguf_writer.h"

namespace staticlm::fuzz {
namespace {

// Plan file header (plan_file.cpp): magic[8], version u32, reserved u32, payload size u64,
// payload checksum u64, fingerprint u64, zero padding to 64 bytes.
constexpr size_t kPlanHeaderBytes = 64;
constexpr size_t kPlanPayloadSizeOffset = 16;
constexpr size_t kPlanChecksumOffset = 24;
// The session header's own checksum is its last 8 bytes (session_file.h).
constexpr size_t kSessionHeaderChecksumOffset = kSessionHeaderBytes - 8;

void StoreU64(uint8_t* at, uint64_t v) {
  std::memcpy(at, &v, sizeof(v));
}

}  // namespace

void WriteFuzzModel(const std::string& path) {
  test::TinyLlamaOptions options;
  options.block_count = 2;
  options.embedding_length = 32;
  options.head_count = 2;
  options.head_count_kv = 1;
  options.feed_forward_length = 32;
  options.context_length = 64;
  Status s = test::WriteTinyLlama(path.c_str(), options);
  if (!s.ok()) {
    std::fprintf(stderr, "fuzz: cannot write the tiny model %s: %s\n", path.c_str(), s.message());
    std::abort();
  }
}

staticlm_limits SessionLimits(int kind) {
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.max_context = 32;
  limits.prefill_chunk = 4;
  limits.max_prompt_bytes = 256;
  if (kind == 1) {
    limits.window = 8;
    limits.sinks = 2;
    limits.kv_type = STATICLM_KV_Q8;
  }
  return limits;
}

uint64_t Fnv1a(const uint8_t* data, size_t size) {
  StreamChecksum c;
  c.Add(data, size);
  return c.value();
}

void RepairPlanFile(std::vector<uint8_t>* file) {
  if (file->size() < kPlanHeaderBytes) return;
  uint8_t* bytes = file->data();
  const size_t payload = file->size() - kPlanHeaderBytes;
  StoreU64(bytes + kPlanPayloadSizeOffset, payload);
  StoreU64(bytes + kPlanChecksumOffset, Fnv1a(bytes + kPlanHeaderBytes, payload));
}

void RepairSessionFile(uint8_t repairs, uint64_t fingerprint, std::vector<uint8_t>* file) {
  if (file->size() < kSessionHeaderBytes) return;
  uint8_t* header = file->data();
  if (repairs & kRepairChecksums) {
    StoreU64(header + kSessionHeaderChecksumOffset, Fnv1a(header, kSessionHeaderChecksumOffset));
  }
  SessionHeader h;
  if (!DecodeSessionHeader(header, &h).ok()) return;
  if (repairs & kRepairFingerprint) h.model_fingerprint = fingerprint;
  if (repairs & kRepairChecksums) {
    h.payload_checksum = Fnv1a(header + kSessionHeaderBytes, file->size() - kSessionHeaderBytes);
  }
  EncodeSessionHeader(h, header);
}

std::vector<uint8_t> ReadFileBytes(const std::string& path) {
  std::vector<uint8_t> bytes;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return bytes;
  uint8_t buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), f)) > 0)
    bytes.insert(bytes.end(), buffer, buffer + n);
  std::fclose(f);
  return bytes;
}

void WriteFileBytes(const std::string& path, const uint8_t* data, size_t size) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || std::fwrite(data, 1, size, f) != size || std::fclose(f) != 0) {
    std::fprintf(stderr, "fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
}

std::string ScratchPath(const std::string& name) {
  const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  return std::string(dir) + "/staticlm-fuzz-" + std::to_string(getpid()) + "-" + name;
}

void Require(staticlm_status status, const char* what, staticlm_context* context) {
  if (status == STATICLM_OK) return;
  std::fprintf(stderr, "fuzz: %s failed (%d): %s\n", what, static_cast<int>(status),
               context != nullptr ? staticlm_last_error(context) : "");
  std::abort();
}

}  // namespace staticlm::fuzz
